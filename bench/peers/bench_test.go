package main

import (
	"fmt"
	"testing"
)

// BenchmarkAppend appends b.N records to each engine under the none policy,
// for CPU profiles of the append path (go test -bench Append -cpuprofile);
// strata-grow is strata without preallocation.
func BenchmarkAppend(b *testing.B) {
	benchAppend(b, PolicyNone, func(e Engine) bool { return e.Mapping(PolicyNone) != "" })
}

// BenchmarkAppendSync appends b.N records under the fsync-every-append
// policy, strata with and without preallocation (strata-grow) beside the
// peers that support the policy: go test -run '^$' -bench AppendSync.
func BenchmarkAppendSync(b *testing.B) {
	benchAppend(b, PolicyEvery, func(e Engine) bool {
		return e.Mapping(PolicyEvery) != "" && e.Unsupported(PolicyEvery) == ""
	})
}

// BenchmarkAppendBatch appends b.N records under the fsync-every-batch policy
// (B = 100 records per sync), every engine that supports it, one record per
// call: go test -run '^$' -bench AppendBatch.
func BenchmarkAppendBatch(b *testing.B) {
	benchAppend(b, PolicyBatch, func(e Engine) bool {
		return e.Mapping(PolicyBatch) != "" && e.Unsupported(PolicyBatch) == ""
	})
}

// benchAppend appends b.N records of 100 B and 1 KiB under policy p to every
// engine ok accepts, strata-grow included.
func benchAppend(b *testing.B, p Policy, ok func(Engine) bool) {
	for _, size := range []int{100, 1024} {
		recs := newRecords(size)
		for _, e := range append(engines(), strataEngine{grow: true}) {
			if !ok(e) {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", e.Name(), size), func(b *testing.B) {
				w, err := e.Create(b.TempDir(), p, 100)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := w.Append(recs.get(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
