package main

import (
	"strings"
	"testing"
)

// testEngines is every engine and the fsync columns' write(2) loop, whose
// zeroed reserve (64 KiB) outlasts 250 records of 100 B and not of 1 KiB.
func testEngines() []Engine { return append(engines(), loopEngine{reserve: 64 << 10}) }

// TestEnginesRoundTrip appends a few hundred records to every engine under
// every policy it supports, reopens and reads them back: count, size and the
// index stamped in each record must all come back.
func TestEnginesRoundTrip(t *testing.T) {
	for _, size := range []int{100, 1024} {
		recs := newRecords(size)
		for _, e := range testEngines() {
			for _, p := range policies {
				if e.Mapping(p) == "" {
					if e.Unsupported(p) == "" {
						t.Errorf("%s %s: neither a mapping nor a reason", e.Name(), p)
					}
					continue
				}
				c := storageCase{engine: e, size: size, policy: p, records: 250, batch: 16}
				if _, err := runStorage(c, t.TempDir(), recs); err != nil {
					t.Errorf("%s %s %d B: %v", e.Name(), p, size, err)
				}
			}
		}
	}
}

// TestReadBackDetectsLoss writes fewer records than it claims and expects the
// check to fail: the round trip test above must be able to fail.
func TestReadBackDetectsLoss(t *testing.T) {
	recs := newRecords(100)
	for _, e := range testEngines() {
		if e.Mapping(PolicyBatch) == "" {
			continue
		}
		dir := t.TempDir()
		w, err := e.Create(dir, PolicyBatch, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			if i == 5 {
				continue // a hole
			}
			if err := w.Append(recs.get(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, _, err = readBack(e, dir, 100)
		if err == nil || !strings.Contains(err.Error(), "record 5 carries 6") {
			t.Errorf("%s: read back of a log with a hole: %v, want record 5 carries 6", e.Name(), err)
		}
	}
}

// TestInterleavedRoundTrip runs the interleaved schedule of both fsync
// cells over every engine that supports the policy: each log must read back
// every record in order, whatever the other logs did between its slices. The
// batch of 7 does not divide a slice, so slices end inside batches.
func TestInterleavedRoundTrip(t *testing.T) {
	recs := newRecords(100)
	for _, p := range []Policy{PolicyEvery, PolicyBatch} {
		var cases []storageCase
		for _, e := range testEngines() {
			if e.Mapping(p) != "" {
				cases = append(cases, storageCase{engine: e, size: 100, policy: p, records: 3 * interleaveRounds, batch: 7})
			}
		}
		if len(cases) < 3 {
			t.Fatalf("%s: %d engines, want every fsyncing engine", p, len(cases))
		}
		res, err := runStorageInterleaved(cases, t.TempDir(), recs, int(p)) // the read order rotates
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for i, r := range res {
			if r.appendPerSec <= 0 || r.readPerSec <= 0 {
				t.Errorf("%s: %s: append %.0f/s, read %.0f/s", p, cases[i].engine.Name(), r.appendPerSec, r.readPerSec)
			}
		}
	}
}
