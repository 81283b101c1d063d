package server

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQuotaMetrics: a throttled client's rate and average throttle time
// are exported under the names the JMX exporter gives Kafka's quota
// MBeans, with user and client_id labels, and the exposition passes
// promtool when it is installed.
func TestQuotaMetrics(t *testing.T) {
	s := metricsServer(t, "quota.window.num=3")
	newTopic(t, s, "qm", 1)
	setQuota(t, s, clientEntity("raw"), quotaProducerByteRate, 20000, false)
	r := dialRaw(t, s)
	resp := r.roundTrip(produceReqFor(t, "qm", 9, 60, 1000), 1).(*kmsg.ProduceResponse)
	if resp.ThrottleMillis <= 0 {
		t.Fatal("produce over quota not throttled")
	}
	body := scrape(t, s, "/metrics")
	value := func(name string) float64 {
		t.Helper()
		// a clients/<id> quota tags the rate with the client id only
		m := regexp.MustCompile(`(?m)^` + name + `\{client_id="raw",user=""\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s for client raw in:\n%s", name, grep(body, "kafka_server_produce"))
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := value("kafka_server_produce_throttle_time"); v != float64(resp.ThrottleMillis) {
		t.Fatalf("kafka_server_produce_throttle_time %v, want the %d ms given", v, resp.ThrottleMillis)
	}
	if v := value("kafka_server_produce_byte_rate"); v < 20000 {
		t.Fatalf("kafka_server_produce_byte_rate %v, want over the 20000 quota", v)
	}
	if path, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
	}
}

func grep(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
