package kwire_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/server"
)

func startBroker(t *testing.T) *server.Server {
	t.Helper()
	cfg, err := server.LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestAgainstBroker talks to a real strata broker: ApiVersions
// negotiation, Metadata, a pipelined batch, and a Fetch v12 (a follower's)
// whose record batches decode, also when pipelined before another
// response.
func TestAgainstBroker(t *testing.T) {
	s := startBroker(t)
	addr := s.Addr().String()
	c, err := kwire.Dial(ctx(t), addr, kwire.Options{ClientID: "strata-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Negotiate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	fv, err := c.Version(int16(kmsg.Fetch))
	if err != nil || fv != 12 {
		t.Fatalf("fetch version %d %v", fv, err)
	}
	mv, err := c.Version(int16(kmsg.Metadata))
	if err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx(t), &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = mv
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	meta.Topics = append(meta.Topics, mt)
	resp, err := c.Request(ctx(t), meta)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.(*kmsg.MetadataResponse)
	if len(m.Brokers) != 1 || len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata %+v", m)
	}

	fetch := func() *kmsg.FetchRequest {
		f := kmsg.NewPtrFetchRequest()
		f.Version = fv
		f.ReplicaID = -1
		f.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 0
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		fp.LastFetchedEpoch = -1
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		return f
	}
	resp, err = c.Request(ctx(t), fetch())
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 10 {
		t.Fatalf("fetch: error %d hw %d", p.ErrorCode, p.HighWatermark)
	}
	n := countRecords(t, p.RecordBatches)
	if n != 10 {
		t.Fatalf("fetched %d records", n)
	}
	kept := append([]byte(nil), p.RecordBatches...)

	// pipelined: ApiVersions, Fetch, Metadata in one write; the Fetch's
	// records are copied out before the Metadata response is read over them
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	rs, err := c.Pipeline(ctx(t), av, fetch(), meta)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Fatalf("pipeline: %v", rs)
	}
	got := rs[1].(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	if string(got) != string(kept) {
		t.Fatal("a pipelined fetch's records were overwritten by the next response")
	}
	if len(rs[2].(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatal("pipelined metadata")
	}
}

func countRecords(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		h, err := record.ParseEntryHeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		n += int(record.Batch(b[:h.TotalSize()]).NumRecords())
		b = b[h.TotalSize():]
	}
	return n
}

// TestBrokerGone: the broker closes; the next request says ErrClosed.
func TestBrokerGone(t *testing.T) {
	s := startBroker(t)
	c, err := kwire.Dial(ctx(t), s.Addr().String(), kwire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Request(ctx(t), av); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var lastErr error
	for i := 0; i < 3; i++ { // the first write may still land in the socket buffer
		if _, lastErr = c.Request(ctx(t), av); lastErr != nil {
			break
		}
	}
	if !errors.Is(lastErr, kwire.ErrClosed) {
		t.Fatalf("request to a closed broker: %v", lastErr)
	}
}
