package main

import (
	"fmt"
	"os"
	"time"
)

// interleaveRounds is how many slices an fsync policy's cell is cut into.
const interleaveRounds = 20

// runStorageInterleaved runs one policy's cases for every engine at once: all
// logs are created first, then the records are appended in interleaveRounds
// slices, each slice going to every engine in turn (the order rotating by
// slice), and each engine's time is the sum of its own slices. Under fsync
// every append or every batch the engines all wait on the same disk, whose
// fdatasync rate moves from one second to the next on a virtual machine (the
// fsync-every-batch cell at 1 KiB ran at 90k-170k appends/s for the same
// engine within minutes); run one after the other, a cell compared engines at
// different moments of that drift, and interleaved they meet the same
// moments. A slice may end inside a batch: the engine's next slice carries on
// with it, and whatever is left at the end is flushed by Close, untimed, as
// in runStorage. Read-back is as in runStorage, after every log is closed,
// one engine after another in an order that rotates with run.
func runStorageInterleaved(cases []storageCase, base string, recs *records, run int) ([]storageResult, error) {
	if err := syncFS(base); err != nil {
		return nil, err
	}
	type open struct {
		w    Writer
		dir  string
		took time.Duration
	}
	logs := make([]open, len(cases))
	defer func() {
		for _, o := range logs {
			if o.dir != "" {
				os.RemoveAll(o.dir)
			}
		}
	}()
	closeAll := func() {
		for _, o := range logs {
			if o.w != nil {
				o.w.Close()
			}
		}
	}
	for i, c := range cases {
		dir, err := os.MkdirTemp(base, "peers-*")
		if err != nil {
			closeAll()
			return nil, err
		}
		logs[i].dir = dir
		if logs[i].w, err = c.engine.Create(dir, c.policy, c.batch); err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: create: %w", c.engine.Name(), err)
		}
	}
	n := cases[0].records
	for r := 0; r < interleaveRounds; r++ {
		from, to := n*r/interleaveRounds, n*(r+1)/interleaveRounds
		for k := range cases {
			i := (k + r) % len(cases)
			t0 := time.Now()
			for j := from; j < to; j++ {
				if err := logs[i].w.Append(recs.get(j)); err != nil {
					closeAll()
					return nil, fmt.Errorf("%s: append %d: %w", cases[i].engine.Name(), j, err)
				}
			}
			logs[i].took += time.Since(t0)
		}
	}
	for i, c := range cases {
		err := logs[i].w.Close()
		logs[i].w = nil
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: close: %w", c.engine.Name(), err)
		}
	}
	// The read-backs go one after another, in an order rotating with the
	// run, each after a syncfs, as runStorage's do.
	out := make([]storageResult, len(cases))
	for k := range cases {
		i := (k + run) % len(cases)
		c := cases[i]
		if err := syncFS(base); err != nil {
			return nil, err
		}
		got, readSec, err := readBack(c.engine, logs[i].dir, c.size)
		if err != nil {
			closeAll()
			return nil, err
		}
		if got != n {
			closeAll()
			return nil, fmt.Errorf("%s: read back %d records, appended %d", c.engine.Name(), got, n)
		}
		out[i] = storageResult{appendPerSec: float64(n) / logs[i].took.Seconds(), readPerSec: float64(got) / readSec}
	}
	return out, nil
}
