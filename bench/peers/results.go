package main

import (
	"encoding/json"
	"os"
	"time"
)

// savedResults is every run's raw figures, written beside the report
// (-save) so the report and charts can be rendered again (-render) without
// running the benchmarks, e.g. after editing NOTES.md.
type savedResults struct {
	Started, Finished time.Time
	Load, LoadEnd     string
	Machine           []string
	Runs              int
	Base              string
	Sizes             []int
	Records           map[int]int
	RecordsSync       int
	Batch             int
	Storage           bool
	Protocol          bool
	ProtoRecords      int
	ProtoRecordsSync  int
	ProtoWarmup       int `json:",omitempty"` // 0 in results saved before the warm-up existed
	LatencyRate       int
	LatencyCount      int
	Limits            []savedLimits
	StorageRuns       []savedStorage
	ProtocolRuns      []savedProto
	ProtoErr          map[string]string
}

type savedLimits struct{ WriteMBps, FdatasyncsSec, ReadCRCMBps, LoopbackMBps float64 }

type savedStorage struct {
	Engine       string
	Size         int
	Policy       string
	Append, Read []float64
}

type savedProto struct {
	Engine                                     string
	Size                                       int
	Policy                                     string
	Produce, Consume, P50, P99, P999, Loopback []float64
}

func (r *report) save(path string) error {
	s := savedResults{
		Started: r.started, Finished: r.finished, Load: r.load, LoadEnd: r.loadEnd, Machine: r.machine,
		Runs: r.cfg.runs, Base: r.cfg.base, Sizes: r.cfg.sizes, Records: r.cfg.records, RecordsSync: r.cfg.recordsSync,
		Batch: r.cfg.batch, Storage: r.cfg.storage, Protocol: r.cfg.protocol, ProtoRecords: r.cfg.protoRecords,
		ProtoRecordsSync: r.cfg.protoRecordsSync, ProtoWarmup: r.cfg.protoWarmup, LatencyRate: r.cfg.latencyRate, LatencyCount: r.cfg.latencyCount,
		ProtoErr: r.protoErr,
	}
	for _, m := range r.limits {
		s.Limits = append(s.Limits, savedLimits{m.writeMBps, m.fdatasyncsSec, m.readCRCMBps, m.loopbackMBps})
	}
	for _, e := range append(engines(), loopEngine{}) {
		for _, size := range r.cfg.sizes {
			for _, p := range policies {
				if v := r.storage[storageKey{e.Name(), size, p}]; v != nil {
					s.StorageRuns = append(s.StorageRuns, savedStorage{e.Name(), size, p.String(), v.appendPerSec, v.readPerSec})
				}
			}
		}
	}
	for _, k := range r.protoKeys() {
		v := r.protocol[k]
		s.ProtocolRuns = append(s.ProtocolRuns, savedProto{k.engine, k.size, k.policy, v.produce, v.consume, v.p50, v.p99, v.p999, v.loopback})
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// loadReport rebuilds a report from saved results; out, charts and the engine
// filter come from cfg.
func loadReport(path string, cfg config) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedResults
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	cfg.runs, cfg.base, cfg.sizes, cfg.records, cfg.recordsSync = s.Runs, s.Base, s.Sizes, s.Records, s.RecordsSync
	cfg.batch, cfg.storage, cfg.protocol, cfg.protoRecords = s.Batch, s.Storage, s.Protocol, s.ProtoRecords
	cfg.protoRecordsSync, cfg.latencyRate, cfg.latencyCount = s.ProtoRecordsSync, s.LatencyRate, s.LatencyCount
	cfg.protoWarmup = s.ProtoWarmup
	r := &report{cfg: cfg, started: s.Started, finished: s.Finished, load: s.Load, loadEnd: s.LoadEnd, machine: s.Machine, protoErr: s.ProtoErr}
	for _, m := range s.Limits {
		r.limits = append(r.limits, machineLimits{m.WriteMBps, m.FdatasyncsSec, m.ReadCRCMBps, m.LoopbackMBps})
	}
	for _, v := range s.StorageRuns {
		for _, p := range policies {
			if p.String() == v.Policy {
				for i := range v.Append {
					r.addStorage(v.Engine, v.Size, p, storageResult{v.Append[i], v.Read[i]})
				}
			}
		}
	}
	for _, v := range s.ProtocolRuns {
		for i := range v.Produce {
			res := protoResult{Produce: v.Produce[i], Consume: v.Consume[i], P50: -1, P99: -1, P999: -1}
			if i < len(v.P50) {
				res.P50, res.P99, res.P999 = v.P50[i], v.P99[i], v.P999[i]
			}
			if i < len(v.Loopback) {
				res.Loopback = v.Loopback[i]
			}
			r.addProto(protoKey{v.Engine, v.Size, v.Policy}, res)
		}
	}
	return r, nil
}
