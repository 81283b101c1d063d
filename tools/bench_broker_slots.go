package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/stratalog/strata/server"
)

// --metrics both runs two in-process brokers in two slots. A slot is a
// data directory kept for the whole validation mode and the broker serving
// it; the brokers' roles (metrics on, metrics off) swap between the slots
// every two runs, each broker restarted on its directory with the flag
// flipped, and the produce order alternates run by run:
//
//	run 0: slot 0 on,  slot 1 off; produce slot 0 then slot 1 (on first)
//	run 1: slot 0 on,  slot 1 off; produce slot 1 then slot 0 (off first)
//	run 2: slot 0 off, slot 1 on;  produce slot 0 then slot 1 (off first)
//	run 3: slot 0 off, slot 1 on;  produce slot 1 then slot 0 (on first)
//
// and again from run 4. At the end of each run the run's topics are
// deleted on both brokers (file.delete.delay.ms=0: their files at once),
// so the next run writes into page cache the last one freed instead of
// into fresh memory, which this kind of VM faults in slowly and unevenly
// (the log would otherwise grow by ~1.8 GB a run with the default passes). Over four runs each role runs twice in each slot
// and goes first twice, so what belongs to an instance (its directory and
// the page cache of its files, its goroutines, port and connections, which
// broker was started or warmed first) falls on on and off alike instead of
// always on one of them; the slots' produces stay in ABBA order (0 1, 1 0,
// 0 1, ...) and so do the roles' (on off, off on, off on, on off). Both
// brokers are restarted together, so at every run they are equally fresh.

// onSlot is the slot of the metrics-on broker in run.
func onSlot(run int) int { return (run / 2) % 2 }

// firstSlot is the slot whose broker produces first in run.
func firstSlot(run int) int { return run % 2 }

// slotRole is the role (index into cfg.metrics: 0 on, 1 off) of slot's
// broker in run.
func slotRole(run, slot int) int { return slot ^ onSlot(run) }

// benchSlot is one slot: its data directory and the broker serving it now.
type benchSlot struct {
	dir string
	srv *server.Server
	tgt benchTarget
}

// benchSlotSeen, when set (tests), is told of each slot at the end of
// each run, before the run's topics are deleted: the run, the slot, its
// directory and its broker.
var benchSlotSeen func(run, slot int, dir string, srv *server.Server)

// deleteRunTopics deletes the run's topics (the plain one and those of the
// idempotent, transactions and latency phases that exist) from the slot's
// broker.
func (s *benchSlot) deleteRunTopics(topic string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.tgt.seeds...)}, s.tgt.conn...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, topic, topic+"-idempotent", topic+"-txn", topic+"-latency")
	if err != nil {
		return err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("deleting %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// newBenchSlots makes the two slots' data directories.
func newBenchSlots() ([2]*benchSlot, func(), error) {
	var slots [2]*benchSlot
	cleanup := func() {
		for _, s := range slots {
			if s == nil {
				continue
			}
			if s.srv != nil {
				s.srv.Close()
			}
			os.RemoveAll(s.dir)
		}
	}
	for i := range slots {
		dir, err := os.MkdirTemp("", "strata-bench-broker-")
		if err != nil {
			cleanup()
			return slots, nil, err
		}
		slots[i] = &benchSlot{dir: dir}
	}
	return slots, cleanup, nil
}

// start (re)starts the slot's broker with metrics on or off.
func (s *benchSlot) start(c *cli.Context, cfg benchBrokerConfig, mode string, metrics bool, sec *benchSecurity) error {
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
	srv, tgt, err := startBenchTarget(c, cfg, s.dir, mode, metrics, sec, "file.delete.delay.ms=0")
	if err != nil {
		return err
	}
	s.srv, s.tgt = srv, tgt
	return nil
}

// startBenchTarget starts an in-process broker on dir and returns it with
// the driver's target: its PLAINTEXT listener, or with sec its secure
// listener and the client's TLS and SASL options.
func startBenchTarget(c *cli.Context, cfg benchBrokerConfig, dir, mode string, metrics bool, sec *benchSecurity, overrides ...string) (*server.Server, benchTarget, error) {
	extra := overrides
	if sec != nil {
		var err error
		ov, err := sec.overrides(dir)
		if err != nil {
			return nil, benchTarget{}, err
		}
		extra = append(extra, ov...)
	}
	srv, err := startBenchServer(dir, mode, metrics, c.App.ErrWriter, cfg.retentionBytes > 0, extra...)
	if err != nil {
		return nil, benchTarget{}, err
	}
	tgt := brokerTarget(srv.Addr().String())
	if sec != nil {
		if err := sec.addUser(srv.Addr().String()); err != nil {
			srv.Close()
			return nil, benchTarget{}, err
		}
		tgt.seeds, tgt.conn = []string{srv.ListenerAddr(sec.protocol).String()}, sec.clientOpts()
	}
	return srv, tgt, nil
}
