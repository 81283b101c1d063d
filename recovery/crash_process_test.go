package recovery

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

const crashChildEnv = "STRATA_RECOVERY_CRASH_CHILD"

// crashSegOpts are the child's log options; odd rounds preallocate (the
// kill then always leaves a zero-filled tail in the active segment).
func crashSegOpts(prealloc bool) *segment.Options {
	return &segment.Options{SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, SegmentIndexBytes: 64 << 10, Preallocate: prealloc, Logger: quiet}
}

// TestCrashChild is the child process of TestSIGKILLRecovery: it opens the data
// directory named by the environment, appends batches to t-0 forever and prints
// "ack <base> <last> <crc>" after each append returns.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("child of TestSIGKILLRecovery")
	}
	prealloc := os.Getenv(crashChildEnv+"_PREALLOC") == "1"
	opts := &Options{OptionsFor: func(string) *segment.Options { return crashSegOpts(prealloc) }, Logger: quiet}
	d, _, err := OpenDataDir(dir, opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	l := d.Log(tp)
	if l == nil {
		if l, err = segment.Open(d.PartitionDir(tp), crashSegOpts(prealloc)); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		d.AddLog(tp, l)
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashChildEnv+"_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	fmt.Println("ready")
	for i := 0; ; i++ {
		b := batch(t, i, 1+rng.IntN(20), 10+rng.IntN(300))
		info, err := l.Append(b)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ack %d %d %d\n", info.FirstOffset, info.LastOffset, record.Batch(b).CRC())
	}
}

type ack struct {
	base, last int64
	crc        uint32
}

// A real process appending to a log is SIGKILLed at random moments; every
// append it acknowledged (its bytes were in the page cache, which survives the
// kill) is in the recovered log, unchanged, and nothing else is.
func TestSIGKILLRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	pdir := filepath.Join(dir, "t-0")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var acked []ack
	var trimmed int64
	defer func() {
		if trimmed == 0 && !t.Failed() {
			t.Error("no preallocated round left a zero-filled tail to trim")
		}
	}()
	for round := 0; round < 6; round++ {
		prealloc := round%2 == 1
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_SEED=%d", crashChildEnv, rng.Uint64()),
			fmt.Sprintf("%s_PREALLOC=%d", crashChildEnv, round%2))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if l := <-lines; l != "ready" {
			t.Fatalf("child: %q", l)
		}
		kill := time.After(time.Duration(5+rng.IntN(150)) * time.Millisecond)
		killed := false
		n := 0
		for l := range lines {
			if !killed {
				select {
				case <-kill:
					cmd.Process.Signal(syscall.SIGKILL)
					killed = true
				default:
				}
			}
			f := strings.Fields(l)
			if len(f) != 4 || f[0] != "ack" {
				t.Fatalf("child: %q", l)
			}
			var a ack
			a.base, _ = strconv.ParseInt(f[1], 10, 64)
			a.last, _ = strconv.ParseInt(f[2], 10, 64)
			crc, _ := strconv.ParseUint(f[3], 10, 32)
			a.crc = uint32(crc)
			acked = append(acked, a)
			n++
		}
		if !killed {
			t.Fatal("child exited by itself")
		}
		cmd.Wait()
		// Recover: the lock died with the child, the marker was never written.
		d, rep, err := OpenDataDir(dir, &Options{OptionsFor: func(string) *segment.Options { return crashSegOpts(prealloc) }, Logger: quiet})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if rep.CleanShutdown {
			t.Fatal("clean shutdown after SIGKILL")
		}
		end := d.Log(TopicPartition{Topic: "t", Partition: 0}).LogEndOffset()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		got := verifyPartition(t, vfs.OS, pdir)
		crcs := batchCRCs(t, pdir)
		for _, a := range acked {
			c, ok := crcs[batchRange{a.base, a.last}]
			if !ok || c != a.crc {
				t.Fatalf("round %d: acknowledged batch [%d, %d] crc %08x lost (found %v %08x); log end %d",
					round, a.base, a.last, a.crc, ok, c, end)
			}
		}
		if len(got) < len(acked) || (len(acked) > 0 && end <= acked[len(acked)-1].last) {
			t.Fatalf("round %d: %d batches for %d acknowledged, end %d", round, len(got), len(acked), end)
		}
		if prealloc {
			checkPreallocatedCut(t, round, pdir, rep, end, acked)
		}
		trimmed += rep.Totals.BytesPreallocatedTrimmed
		t.Logf("round %d: %d appends acknowledged this round, %d batches in the log, %d bytes cut, %d preallocated bytes trimmed",
			round, n, len(got), rep.Totals.BytesTruncated, rep.Totals.BytesPreallocatedTrimmed)
		// Unacknowledged batches that made it whole are kept: they count from
		// now on as acknowledged (later rounds must keep them too).
		acked = acked[:0]
		for _, b := range got {
			acked = append(acked, ack{b.base, b.last, crcs[b]})
		}
	}
}

// checkPreallocatedCut checks what recovery cut after a kill of a child
// writing a preallocated log. The kill leaves the page cache as it was at
// that instant, so the tail after the last whole batch is normally the
// zero-filled reserve, only trimmed. But an append's copy is not atomic
// against SIGKILL: a mapped append is a memmove into the reserve, which for
// more than 256 bytes (AVX) stores the body before the batch's first 32
// bytes and its last 128 (seen here: a cut batch whose base offset read 0
// under a valid length and stored CRC), and faults on fresh reserve pages,
// where the kernel acts on the kill; a larger append's pwrite stops between
// pages on a fatal signal. Such a torn batch was never acknowledged (Append
// had not returned) and recovery rightly cuts it, as Kafka does. So at most
// one cut is allowed, and only that one: in the last segment, at the end of
// the recovered log, past every acknowledged batch, nothing removed.
func checkPreallocatedCut(t *testing.T, round int, pdir string, rep *Report, end int64, acked []ack) {
	t.Helper()
	if rep.Totals.Truncations == 0 {
		return
	}
	var cuts []segment.Cut
	for _, p := range rep.Partitions {
		cuts = append(cuts, p.Truncations...)
	}
	files := logFiles(t, vfs.OS, pdir)
	var lastAcked int64 = -1
	if len(acked) > 0 {
		lastAcked = acked[len(acked)-1].last
	}
	if len(cuts) != 1 || rep.Totals.SegmentsRemoved != 0 {
		t.Fatalf("round %d (preallocated): cuts %+v, %d segments removed; want at most one torn batch cut", round, cuts, rep.Totals.SegmentsRemoved)
	}
	c := cuts[0]
	st, err := os.Stat(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	if c.Removed || c.BelowRecoveryPoint || c.File != files[len(files)-1] || c.FirstOffset != end ||
		c.FirstOffset <= lastAcked || c.Position != st.Size() {
		t.Fatalf("round %d (preallocated): cut %+v is not a torn unacknowledged batch at the log end (end %d, last acknowledged %d, last segment %s of %d bytes)",
			round, c, end, lastAcked, files[len(files)-1], st.Size())
	}
	t.Logf("round %d (preallocated): the kill tore the append at offset %d: %s", round, c.FirstOffset, c.Reason)
}

// batchCRCs maps every batch of a partition to its CRC.
func batchCRCs(t *testing.T, pdir string) map[batchRange]uint32 {
	t.Helper()
	out := map[batchRange]uint32{}
	for _, p := range logFiles(t, vfs.OS, pdir) {
		data := readFile(t, vfs.OS, p)
		it := record.NewIterator(data, record.ScanOptions{VerifyCRC: true})
		for it.Next() {
			h := it.Header()
			out[batchRange{h.Offset, h.LastOffset}] = it.Batch().CRC()
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	return out
}
