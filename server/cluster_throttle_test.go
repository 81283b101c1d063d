package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// TestThrottledPartitions: Kafka's parsing of the throttled-replica lists
// for one broker, and the check of the dynamic rates.
func TestThrottledPartitions(t *testing.T) {
	for _, tc := range []struct {
		v    string
		all  bool
		want string
	}{
		{"", false, "[]"},
		{"*", true, "[]"},
		{"0:1,0:2,1:2,2:3", false, "[0 1]"},
		{" 4 : 2 , 4:2", false, "[4]"},
		{"x:2,3", false, "[]"},
	} {
		all, parts := throttledPartitions(tc.v, 2)
		if all != tc.all || fmt.Sprint(parts) != tc.want {
			t.Errorf("%q: all %v %v, want %v %s", tc.v, all, parts, tc.all, tc.want)
		}
	}
	for _, bad := range [][2]string{{leaderThrottledRate, "-1"}, {followerThrottledRate, "fast"}, {"num.io.threads", "8"}} {
		if err := checkDynamicBrokerConfig(bad[0], bad[1]); !errors.Is(err, ErrConfig) {
			t.Errorf("%s=%s: %v", bad[0], bad[1], err)
		}
	}
	if err := checkDynamicBrokerConfig(leaderThrottledRate, "1000000"); err != nil {
		t.Error(err)
	}
}

// TestWholeBatches: a throttled follower's read is cut to its whole
// batches (what the follower keeps and the throttles count); a region
// whose first entry is not whole, whose header is not a length, or whose
// file cannot be read is left as it is.
func TestWholeBatches(t *testing.T) {
	var file []byte
	var ends []int64
	for _, v := range []string{"a", "bb", "ccc"} {
		b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), []record.Record{{Timestamp: 1, Value: []byte(v)}})
		if err != nil {
			t.Fatal(err)
		}
		file = append(file, b...)
		ends = append(ends, int64(len(file)))
	}
	fsys := vfs.NewMem()
	f, err := fsys.Create("/seg.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, 40) // zero lengths
	if _, err := f.Write(append(append([]byte{}, file...), junk...)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		pos, n, want int64
	}{
		{"all whole", 0, ends[2], ends[2]},
		{"partial last", 0, ends[2] - 1, ends[1]},
		{"partial header", 0, ends[1] + 5, ends[1]},
		{"from the second", ends[0], ends[2] - ends[0] - 3, ends[1] - ends[0]},
		{"first not whole", 0, ends[0] - 1, ends[0] - 1},
		{"zero lengths after", 0, ends[2] + 40, ends[2]},
		{"zero lengths only", ends[2], 40, 40},
		{"past the file", ends[2] + 20, 40, 40},
	} {
		r := segment.Region{File: f, Pos: tc.pos, Len: tc.n}
		wholeBatches(&r)
		if r.Len != tc.want || r.Pos != tc.pos {
			t.Errorf("%s: region [%d, +%d), want [%d, +%d)", tc.name, r.Pos, r.Len, tc.pos, tc.want)
		}
	}
}
