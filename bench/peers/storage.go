package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// storageCase is one cell of the storage table: an engine, a record size and a
// policy, with the number of records appended.
type storageCase struct {
	engine  Engine
	size    int
	policy  Policy
	records int
	batch   int
}

// storageResult holds one run of a case: records/s of the timed append loop
// and of the timed reopen-and-read.
type storageResult struct {
	appendPerSec float64
	readPerSec   float64
}

// records is a pool of distinct random payloads reused round-robin; record i
// carries i in its first 8 bytes (stamped just before its append), so the
// read-back checks order and completeness. The pool is larger than any batch,
// so a payload is never restamped while an engine still holds it.
type records struct {
	pool [][]byte
}

const poolSize = 4096

func newRecords(size int) *records {
	if size < 8 {
		size = 8
	}
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	r := &records{pool: make([][]byte, poolSize)}
	for i := range r.pool {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		r.pool[i] = b
	}
	return r
}

func (r *records) get(i int) []byte {
	b := r.pool[i%poolSize]
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

// runStorage appends c.records records to a new log in a fresh directory under
// base (timed: the append calls only, not open or close), closes it, then
// reopens and reads everything back through the engine's read path (timed:
// open, read, close), checking count, sizes and order.
func runStorage(c storageCase, base string, recs *records) (storageResult, error) {
	// The previous case's dirty pages are written back first, so no engine
	// pays for its predecessor's writeback.
	if err := syncFS(base); err != nil {
		return storageResult{}, err
	}
	dir, err := os.MkdirTemp(base, "peers-*")
	if err != nil {
		return storageResult{}, err
	}
	defer os.RemoveAll(dir)
	w, err := c.engine.Create(dir, c.policy, c.batch)
	if err != nil {
		return storageResult{}, fmt.Errorf("%s: create: %w", c.engine.Name(), err)
	}
	t0 := time.Now()
	for i := 0; i < c.records; i++ {
		if err := w.Append(recs.get(i)); err != nil {
			w.Close()
			return storageResult{}, fmt.Errorf("%s: append %d: %w", c.engine.Name(), i, err)
		}
	}
	appendSec := time.Since(t0).Seconds()
	if err := w.Close(); err != nil {
		return storageResult{}, fmt.Errorf("%s: close: %w", c.engine.Name(), err)
	}
	n, readSec, err := readBack(c.engine, dir, c.size)
	if err != nil {
		return storageResult{}, err
	}
	if n != c.records {
		return storageResult{}, fmt.Errorf("%s: read back %d records, appended %d", c.engine.Name(), n, c.records)
	}
	return storageResult{appendPerSec: float64(c.records) / appendSec, readPerSec: float64(n) / readSec}, nil
}

// readBack reads the log in dir and checks that record i has size bytes and
// carries i; it returns the count and the seconds taken.
func readBack(e Engine, dir string, size int) (int, float64, error) {
	n := 0
	t0 := time.Now()
	err := e.ReadAll(dir, func(rec []byte) error {
		if len(rec) != size || len(rec) < 8 {
			return fmt.Errorf("%s: record %d has %d bytes, want %d", e.Name(), n, len(rec), size)
		}
		if got := binary.BigEndian.Uint64(rec); got != uint64(n) {
			return fmt.Errorf("%s: record %d carries %d: out of order or lost", e.Name(), n, got)
		}
		n++
		return nil
	})
	secs := time.Since(t0).Seconds()
	if err != nil {
		return n, 0, fmt.Errorf("%s: read: %w", e.Name(), err)
	}
	return n, secs, nil
}

// syncFS is syncfs(2) on the filesystem holding dir.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
