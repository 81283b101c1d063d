package main

import "fmt"

// floorsMarkdown checks issue 8's floors against this run's medians and lists
// every place strata is not ahead.
func (r *report) floorsMarkdown(w func(string, ...any)) {
	w("## Floors (issue 8) in this run\n\n")
	var behind []string
	checked := 0
	if r.cfg.storage {
		for _, size := range r.cfg.sizes {
			for _, c := range storageColumns() {
				// The best peer per strata row it is compared with (1-record
				// or B-record strata), for the fsync columns' ≥ 0.95 floor.
				type bestPeer struct {
					name      string
					v, strata float64
				}
				best := map[string]*bestPeer{}
				var refs []string
				for _, e := range engines() {
					if e.Name() == strataName || e.Name() == strataBatchName {
						continue
					}
					ref := c.get(r, c.ref(e.Name()), size).median()
					v := c.get(r, e.Name(), size).median()
					if v == 0 || ref == 0 {
						continue
					}
					checked++
					if v > ref {
						behind = append(behind, fmt.Sprintf("storage %d B, %s: %s %s/s > %s %s/s (strata ×%.2f)", size, c.title, e.Name(), si(v), c.ref(e.Name()), si(ref), ref/v))
					}
					refName := c.ref(e.Name())
					b := best[refName]
					if b == nil {
						b = &bestPeer{}
						best[refName] = b
						refs = append(refs, refName)
					}
					if v > b.v {
						b.name, b.v, b.strata = e.Name(), v, ref
					}
				}
				if c.policy == PolicyNone || c.read {
					continue
				}
				for _, refName := range refs {
					b := best[refName]
					ok := "met"
					if b.strata < 0.95*b.v {
						ok = "NOT met"
					}
					w("- %d B, %s (fsync bounds every engine): %s %s/s vs best peer %s %s/s = ×%.2f; floor ≥ 0.95: **%s**\n", size, c.title, refName, si(b.strata), b.name, si(b.v), b.strata/b.v, ok)
				}
			}
		}
	}
	if r.cfg.protocol {
		for _, k := range r.protoKeys() {
			if k.engine == "strata" {
				continue
			}
			ref := r.protocol[protoKey{"strata", k.size, k.policy}]
			s := r.protocol[k]
			if ref == nil || s == nil {
				continue
			}
			for _, f := range protoFigures() {
				a, b := f.get(ref).median(), f.get(s).median()
				if a <= 0 || b <= 0 {
					continue
				}
				checked++
				if (f.lowerBetter && b < a) || (!f.lowerBetter && b > a) {
					behind = append(behind, fmt.Sprintf("protocol %d B %s, %s: %s %s vs strata %s", k.size, k.policy, f.name, k.engine, fmtFig(b, f), fmtFig(a, f)))
				}
			}
		}
	}
	w("- %d engine-vs-strata comparisons where both ran; strata is ahead in %d of them.\n", checked, checked-len(behind))
	if len(behind) == 0 {
		w("- strata is ahead everywhere both ran.\n\n")
		return
	}
	w("\nWhere strata is **not ahead** in this run:\n\n")
	for _, s := range behind {
		w("- %s\n", s)
	}
	w("\n")
}

func (r *report) reproduceMarkdown(w func(string, ...any)) {
	w("\n## Reproduce\n\n```sh\nmake bench-peers                      # = cd bench/peers && go run . -out ../../BENCHMARKS.md -charts charts -runs 3\n")
	w("cd bench/peers && go run . -runs 3 -dir %s -records-100 %d -records-1k %d -records-sync %d -batch %d -proto-records %d -proto-records-sync %d -proto-warmup %d -latency-rate %d -latency-records %d -out ../../BENCHMARKS.md -charts charts\n",
		r.cfg.base, r.cfg.records[100], r.cfg.records[1024], r.cfg.recordsSync, r.cfg.batch, r.cfg.protoRecords, r.cfg.protoRecordsSync, r.cfg.protoWarmup, r.cfg.latencyRate, r.cfg.latencyCount)
	w("cd bench/peers && go run . -protocol=false -engines strata,tidwall/wal -runs 1   # a subset, report on stdout\n")
	w("cd bench/peers && go run . -render results.json -out ../../BENCHMARKS.md -charts charts   # re-render from the committed raw figures\n")
	w("cd bench/peers && go test ./...      # every adapter round-trips records; the checks can fail\n```\n\n")
	w("`-dir` picks the filesystem under test (default `$TMPDIR`); the strata binary for the protocol table is built from the repository root with `go build` unless `-strata PATH` is given.\n")
}
