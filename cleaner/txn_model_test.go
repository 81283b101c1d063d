package cleaner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCompactionTxnModel extends the compaction model to transactions:
// plain appends and three transactional producers (each transaction
// committed, aborted or left open for a while) over a few keys, with
// tombstones, segment rolls, clock jumps and background passes. After every
// pass, and after a reopen:
//   - a read_committed reader ends with exactly the values per key that the
//     reference's committed and plain records below the last stable offset
//     give (aborted records never show, nothing committed is lost);
//   - what a read_uncommitted reader sees is a subset of what was appended,
//     holds every record of a still open transaction, and every record not
//     aborted at or above the pass's end offset;
//   - the log end never moves.
func TestCompactionTxnModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { runTxnModel(t, seed) })
	}
}

type txnRef struct {
	seen
	pid    int64 // -1: plain
	status byte  // 'p' plain, 'o' open, 'c' committed, 'a' aborted
}

func runTxnModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const retention = 3000
	tl := newTxnLog(t)
	var ref []txnRef
	openTxn := map[int64][]int{} // producer → its open transaction's ref indexes
	nkeys := 4 + rng.IntN(12)
	kv := func(off int64) string {
		v := fmt.Sprint("v", off)
		if rng.IntN(6) == 0 {
			v = "-"
		}
		return fmt.Sprintf("k%d=%s", rng.IntN(nkeys), v)
	}
	add := func(first int64, pid int64, status byte, kvs []string) {
		for i, s := range kvRecords(0, kvs) {
			v := string(s.Value)
			if s.Value == nil {
				v = "-"
			}
			ref = append(ref, txnRef{seen{first + int64(i), string(s.Key), v}, pid, status})
			if status == 'o' {
				openTxn[pid] = append(openTxn[pid], len(ref)-1)
			}
		}
	}
	var removed, markersRemoved int64
	firstDirty := int64(0)
	for step := 0; step < 80; step++ {
		for n := 1 + rng.IntN(4); n > 0; n-- {
			next := tl.l.LogEndOffset()
			kvs := make([]string, 1+rng.IntN(3))
			for i := range kvs {
				kvs[i] = kv(next + int64(i))
			}
			pid := int64(10 + rng.IntN(4)) // 13: plain
			switch {
			case pid == 13:
				add(tl.plain(kvs...), -1, 'p', kvs)
			case len(openTxn[pid]) > 0 && rng.IntN(3) == 0:
				commit := rng.IntN(2) == 0
				tl.end(pid, commit)
				for _, i := range openTxn[pid] {
					ref[i].status = map[bool]byte{true: 'c', false: 'a'}[commit]
				}
				delete(openTxn, pid)
			default:
				add(tl.txn(pid, kvs...), pid, 'o', kvs)
			}
		}
		if rng.IntN(3) == 0 {
			tl.roll()
		}
		if rng.IntN(3) == 0 {
			tl.advance(int64(rng.IntN(retention)))
		}
		if rng.IntN(2) == 0 {
			continue
		}
		endBefore := tl.l.LogEndOffset()
		m, err := NewOffsetMap(SlotBytes*int64(64+rng.IntN(200)), 0.9)
		if err != nil {
			t.Fatal(err)
		}
		st, err := clean(tl.l, m, firstDirty, passOptions{now: tl.now(), deleteRetentionMs: retention,
			segmentBytes: 1 << 30, indexBytes: 1 << 20, producerExpiryMs: DefaultProducerIDExpirationMs, logger: quiet})
		if err != nil && err != ErrNothingToClean {
			t.Fatalf("step %d: clean: %v", step, err)
		}
		if err == nil {
			firstDirty = st.EndOffset
			removed += st.AbortedRemoved
			markersRemoved += int64(st.MarkersRemoved)
		}
		if tl.l.LogEndOffset() != endBefore {
			t.Fatalf("step %d: log end moved from %d to %d", step, endBefore, tl.l.LogEndOffset())
		}
		checkTxnModel(t, tl, ref, firstDirty, fmt.Sprint("step ", step))
	}
	if removed == 0 {
		t.Fatalf("the workload removed no aborted record")
	}
	t.Logf("removed %d aborted records and %d markers", removed, markersRemoved)
	tl.reopen()
	checkTxnModel(t, tl, ref, firstDirty, "after a reopen")
}

func checkTxnModel(t *testing.T, tl *txnLog, ref []txnRef, firstDirty int64, what string) {
	t.Helper()
	lso := tl.l.LastStableOffset()
	var visible []seen
	byOff := map[int64]txnRef{}
	for _, r := range ref {
		byOff[r.Offset] = r
		if r.Offset < lso && (r.status == 'p' || r.status == 'c') {
			visible = append(visible, r.seen)
		}
	}
	rc, _ := consume(t, tl.l, true)
	if got, want := latest(rc), latest(visible); !maps(got, want) {
		t.Fatalf("%s: read_committed ends with %v, want %v", what, got, want)
	}
	ru, _ := consume(t, tl.l, false)
	present := map[int64]bool{}
	for _, g := range ru {
		r, ok := byOff[g.Offset]
		if !ok || r.seen != g {
			t.Fatalf("%s: read_uncommitted sees %v, appended %v", what, g, r.seen)
		}
		present[g.Offset] = true
	}
	for _, r := range ref {
		if (r.status == 'o' || (r.status != 'a' && r.Offset >= firstDirty)) && !present[r.Offset] {
			t.Fatalf("%s: %v (%c, producer %d) is gone (first dirty %d, LSO %d)", what, r.seen, r.status, r.pid, firstDirty, lso)
		}
	}
}
