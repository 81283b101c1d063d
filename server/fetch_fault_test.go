package server

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/segment"
)

// sendfile's fault point: a segment file cut behind the broker's back (an
// operator's mistake, a failing disk remounted) after the fetch computed its
// region from the log's size. sendfile then runs out of file mid-response;
// the broker drops that connection (a half-sent frame cannot be finished),
// and serves other connections and partitions as before.
func TestFetchOfFileCutUnderSendfile(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	r := newTopic(t, s, "cut", 2)
	for i := range 200 {
		for p := int32(0); p < 2; p++ {
			resp := r.roundTrip(produceRequest("cut", p, makeBatch(t, 1, 1000), 9), int32(2*i)+p).(*kmsg.ProduceResponse)
			if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
				t.Fatal(c)
			}
		}
	}
	part := s.topics.partition("cut", 0)
	if err := os.Truncate(filepath.Join(part.dir, segment.FileName(0, segment.LogSuffix)), 64<<10); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, s)
	req := fetchRequest(12, "cut", 0, 0)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 20
	c.send(req, 1)
	// The frame's length promises the region's bytes; the file holds only
	// 64 KiB of them. The broker closes the connection after what sendfile
	// could send: reading the frame ends early.
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil {
		t.Fatal(err)
	}
	want := int(binary.BigEndian.Uint32(sz[:]))
	got, err := io.Copy(io.Discard, io.LimitReader(c.nc, int64(want)))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading the cut fetch: %v", err)
	}
	if int(got) >= want || want < 100<<10 {
		t.Fatalf("read %d of a %d-byte frame: want a frame of the whole region, cut short", got, want)
	}
	healthy(t, s)
	resp := dialRaw(t, s).roundTrip(fetchRequest(12, "cut", 1, 0), 2).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch of the other partition after the fault: code %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}
