package main

import (
	"fmt"
	"testing"
)

// BenchmarkAppend appends b.N records to each engine under the none policy,
// for CPU profiles of the append path (go test -bench Append -cpuprofile);
// strata-grow is strata without preallocation.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		recs := newRecords(size)
		for _, e := range append(engines(), strataEngine{grow: true}) {
			if e.Mapping(PolicyNone) == "" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", e.Name(), size), func(b *testing.B) {
				w, err := e.Create(b.TempDir(), PolicyNone, 1)
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

// BenchmarkAppendSync appends b.N records under the fsync-every-append
// policy, strata with and without preallocation (strata-grow) beside the
// peers that support the policy: go test -run '^$' -bench AppendSync.
func BenchmarkAppendSync(b *testing.B) {
	for _, size := range []int{100, 1024} {
		recs := newRecords(size)
		for _, e := range append(engines(), strataEngine{grow: true}) {
			if e.Mapping(PolicyEvery) == "" || e.Unsupported(PolicyEvery) != "" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", e.Name(), size), func(b *testing.B) {
				w, err := e.Create(b.TempDir(), PolicyEvery, 1)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
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
