package main

import "fmt"

func (r *report) protocolMarkdown(w func(string, ...any)) {
	w("## Protocol: produce, consume and end-to-end latency through a broker\n\n")
	w("Every broker runs as its own process on 127.0.0.1 with its data in a fresh directory under `%s`, started after a `syncfs` (so that no broker pays for the writeback its predecessor left); the driver is another process. strata's broker (`strata broker --override listeners=PLAINTEXT://127.0.0.1:PORT --override log.dirs=DIR`) and kfake (`bench/peers/cmd/kfakebroker`, `kfake.DataDir`) are driven by the **same** franz-go code: `strata bench broker --bootstrap-server HOST:PORT --records N --warmup-records W --record-size S --runs 1 --json` (acks=1, no idempotence, no compression, one partition; produce W warm-up records and wait for their acknowledgements (the client's metadata load, produce connection and first requests, not timed), produce N records, consume those N with a new client, then produce at %d records/s for 0.5 s + %.1f s with a consumer polling, latency = receive − send). NATS JetStream (`bench/peers/cmd/jsbroker`: nats-server v2.15.2 embedded, file storage) is driven by `bench/peers/jetstream.go` with nats.go's `jetstream` API doing the same three phases (W acknowledged warm-up publishes, not timed, then async publish with ≤ 4096 in flight until every PubAck is in; a pull consumer with AckNone reads the N; the same paced latency phase). N = %s records, or %s when the broker fsyncs before acknowledging; W = %s. Both drivers run with GOGC=400: with Go's default of 100 the Kafka driver's heap of a few MB is collected every ~70 ms in the latency phase, and most of the tail of its p99 fell on those collections.\n\n",
		r.cfg.base, r.cfg.latencyRate, float64(r.cfg.latencyCount)/float64(r.cfg.latencyRate), si(float64(r.cfg.protoRecords)), si(float64(r.cfg.protoRecordsSync)), si(float64(r.cfg.protoWarmup)))
	w("Policies: **none**: the broker acknowledges records in the page cache (strata's and Kafka's default, kfake's default with `DataDir`, JetStream's default `sync_interval` of 2 minutes); **fsync**: strata with `log.flush.interval.messages=1` (one fdatasync per produced batch, before the acknowledgement) and Kafka's `log.preallocate=true` (the segment file is extended with fallocate ahead of the writer, so that fdatasync does not also commit a new file size), kfake with `SyncWrites` (fsync of segment and index per produced batch), JetStream with `sync_interval: always` (fsync after every stored message: a JetStream publish is one message, there is no client batch).\n\n")
	var lb sample
	for _, s := range r.protocol {
		lb = append(lb, s.loopback...)
	}
	if len(lb) > 0 {
		w("The driver's loopback limit (one TCP stream, measured by `strata bench broker` in each run): %s MB/s median (%s–%s).\n\n", si(lb.median()), si(lb.min()), si(lb.max()))
	}
	for _, size := range r.cfg.sizes {
		w("### %d-byte records\n\n", size)
		w("![protocol, %d B](%s)\n\n", size, r.chartLink(fmt.Sprintf("protocol-%d.png", size)))
		w("| broker | policy | produce | consume | latency p50 | latency p99 | latency p99.9 |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, pol := range protoPolicies {
			ref := r.protocol[protoKey{"strata", size, pol}]
			for _, e := range protoEngines {
				if !wanted(r.cfg, e) {
					continue
				}
				s := r.protocol[protoKey{e, size, pol}]
				if s == nil {
					w("| %s | %s | n/a | n/a | n/a | n/a | n/a |\n", e, pol)
					continue
				}
				w("| %s | %s |", e, pol)
				for _, f := range []struct {
					get func(*protoSample) sample
					ms  bool
				}{{func(s *protoSample) sample { return s.produce }, false}, {func(s *protoSample) sample { return s.consume }, false},
					{func(s *protoSample) sample { return s.p50 }, true}, {func(s *protoSample) sample { return s.p99 }, true}, {func(s *protoSample) sample { return s.p999 }, true}} {
					v := f.get(s)
					if len(v) == 0 {
						w(" n/a |")
						continue
					}
					if f.ms {
						w(" %.2f ms (%.2f–%.2f)", v.median(), v.min(), v.max())
						if len(v) < len(s.produce) {
							w(" in %d of %d runs", len(v), len(s.produce))
						}
					} else {
						w(" %s", cell(v, size))
					}
					if ref != nil && f.get(ref).median() > 0 {
						w(" ×%.2f", v.median()/f.get(ref).median())
					}
					w(" |")
				}
				w("\n")
			}
		}
		w("\n")
	}
	if len(r.protoErr) > 0 {
		w("Runs whose latency phase failed (n/a above, or shown as in k of 3 runs):\n\n")
		for _, e := range protoEngines {
			if m, ok := r.protoErr[e]; ok {
				w("- %s: %s\n", e, m)
			}
		}
		w("\n")
	}
}
