package server

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestKcatProduceQuota: kcat (librdkafka) producing 5 MiB under a 1 MiB/s
// producer_byte_rate for its client.id takes the quota's time: librdkafka
// honours the throttle time (and the muted connection holds it anyway);
// the same load with another client.id is not throttled. The rate is
// counted past the burst a fresh rate lets through at once (its span is at
// least quota.window.num-1 windows: 2 s, 2 MiB here); kcat exits at its
// last acknowledgement, before that response's throttle time.
func TestKcatProduceQuota(t *testing.T) {
	kcatBin(t)
	s := quotaServer(t)
	createTopic(t, s, "kq", 1)
	const quota = 1 << 20
	setQuota(t, s, clientEntity("kq-slow"), quotaProducerByteRate, quota, false)
	var lines []string
	total := 0
	for total < 5<<20 {
		l := base64.StdEncoding.EncodeToString(randomBytes(750)) // 1000 characters that do not compress
		lines = append(lines, l)
		total += len(l)
	}
	in := strings.Join(lines, "\n") + "\n"
	began := time.Now()
	kcat(t, s, in, "-P", "-t", "kq", "-X", "client.id=kq-fast", "-X", "compression.codec=none", "-X", "batch.size=65536")
	fast := time.Since(began)
	began = time.Now()
	kcat(t, s, in, "-P", "-t", "kq", "-X", "client.id=kq-slow", "-X", "compression.codec=none", "-X", "batch.size=65536")
	slow := time.Since(began)
	rate := float64(total-2*quota) / slow.Seconds()
	t.Logf("kcat, %d bytes: unthrottled %v; at producer_byte_rate %d: %v, %.0f B/s past the burst (%.2fx)", total, fast, quota, slow, rate, rate/quota)
	if rate < 0.5*quota || rate > 1.5*quota {
		t.Fatalf("kcat under a %d B/s quota produced at %.0f B/s, want 0.5x-1.5x", quota, rate)
	}
	if n := len(consumeAll(t, s, "kq", []int32{0}, 2*len(lines))); n != 2*len(lines) {
		t.Fatalf("%d records stored, want %d", n, 2*len(lines))
	}
}
