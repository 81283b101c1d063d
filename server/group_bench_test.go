package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkGroupRebalance measures, inside the coordinator, a rebalance of
// 4 franz-go members (the test's memberOpts: session 1.5 s, heartbeat
// 100 ms, rebalance timeout 5 s, fetch max wait 100 ms; the balancer named
// by the sub-benchmark) on a 16-partition topic: from the last JoinGroup
// the coordinator received to the last SyncGroup response it sent
// (Server.RebalanceStats). Each iteration starts 4 members of a fresh group
// and waits until they own 4 partitions each. Reported: the median over
// iterations of that time (ms) and of its excess over
// group.initial.rebalance.delay.ms (excess_ms, the floor is 100).
func BenchmarkGroupRebalance(b *testing.B) {
	for _, delay := range []int{100, 0} {
		for _, bal := range []struct {
			name string
			b    kgo.GroupBalancer
		}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
			b.Run(fmt.Sprintf("delay=%dms/%s", delay, bal.name), func(b *testing.B) {
				s := startGroupServer(b, b.TempDir(), fmt.Sprintf("group.initial.rebalance.delay.ms=%d", delay))
				createTopicWith(b, newClient(b, s), "rebal", 16)
				var lasts []float64
				for i := range b.N {
					group := fmt.Sprintf("rebal-%d", i)
					var ms []*groupMember
					for j := range 4 {
						ms = append(ms, startMember(b, s, fmt.Sprint(j), group, "rebal", kgo.Balancers(bal.b)))
					}
					waitFor(b, 30*time.Second, "4x4 partitions", func() bool {
						for _, m := range ms {
							if len(m.ownedParts()) != 4 {
								return false
							}
						}
						return true
					})
					var d time.Duration
					for _, st := range s.RebalanceStats() {
						if st.Group == group && st.Members == 4 {
							d = st.Duration // the last 4-member rebalance of the group
						}
					}
					if d == 0 {
						b.Fatalf("no 4-member rebalance recorded for %s", group)
					}
					lasts = append(lasts, float64(d.Microseconds())/1000)
					for _, m := range ms {
						m.close()
					}
				}
				sort.Float64s(lasts)
				med := lasts[len(lasts)/2]
				b.ReportMetric(med, "last_join_to_last_sync_ms")
				b.ReportMetric(med-float64(delay), "excess_ms")
			})
		}
	}
}

// BenchmarkOffsetCommit: 4 franz-go clients commit concurrently, one
// partition per OffsetCommit request (standalone commits, generation -1),
// each to its own group (distinct) or all to one group (shared). Each
// request is appended to __consumer_offsets before it is answered.
// Reported: requests/s. The peer, heartbeat-peer, runs the same loop with a
// Heartbeat of an unknown member (same client path and coordinator lookup,
// no log append): the round-trip limit of this machine for 4 kgo clients,
// so commits/s divided by it is the cost of the commit itself.
func BenchmarkOffsetCommit(b *testing.B) {
	for _, mode := range []string{"distinct-groups", "shared-group", "heartbeat-peer", "raw-distinct-groups"} {
		shared := mode == "shared-group"
		b.Run(mode, func(b *testing.B) {
			s := startGroupServer(b, b.TempDir())
			createTopicWith(b, newClient(b, s), "commits", 4)
			const clients = 4
			cls := make([]*kgo.Client, clients)
			for i := range cls {
				cls[i] = newClient(b, s)
				warm := kmsg.NewPtrFindCoordinatorRequest()
				warm.CoordinatorKey = "warm"
				if _, err := warm.RequestWith(context.Background(), cls[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			cpu0 := processCPU()
			start := time.Now()
			var wg sync.WaitGroup
			for i, cl := range cls {
				n := b.N / clients
				if i < b.N%clients {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					group := fmt.Sprintf("commit-%d", i)
					if shared {
						group = "commit-shared"
					}
					ctx := context.Background()
					if mode == "raw-distinct-groups" {
						rawCommits(b, s, group, int32(i), n)
						return
					}
					for k := range n {
						if mode == "heartbeat-peer" {
							hb := kmsg.NewPtrHeartbeatRequest()
							hb.Group, hb.MemberID, hb.Generation = group, "nobody", 1
							if _, err := hb.RequestWith(ctx, cl); err != nil {
								b.Error(err)
								return
							}
							continue
						}
						req := kmsg.NewPtrOffsetCommitRequest()
						req.Group, req.Generation = group, -1
						rt := kmsg.NewOffsetCommitRequestTopic()
						rt.Topic = "commits"
						rp := kmsg.NewOffsetCommitRequestTopicPartition()
						rp.Partition, rp.Offset = int32(i), int64(k)
						rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
						req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
						resp, err := req.RequestWith(ctx, cl)
						if err != nil {
							b.Error(err)
							return
						}
						if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
							b.Errorf("commit: error %d", c)
							return
						}
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			cpu := processCPU() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
			// CPU (user+sys, broker and clients together) per request, and
			// the rate 2 cores could sustain at that cost: the figure to read
			// when the shared machine's load decides the wall-clock rate.
			per := cpu.Seconds() / float64(b.N)
			b.ReportMetric(per*1e6, "cpu_us/req")
			b.ReportMetric(float64(runtime.NumCPU())/per, "cpu_bound_req/s")
		})
	}
}

// rawCommits is one bare client: a TCP connection sending OffsetCommit v8
// requests one at a time and reading each response, without franz-go's
// client machinery (the broker's side of the cost alone).
func rawCommits(b *testing.B, s *Server, group string, p int32, n int) {
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Error(err)
		return
	}
	defer nc.Close()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "commits"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition = p
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	var buf, resp []byte
	var sz [4]byte
	for k := range n {
		req.Topics[0].Partitions[0].Offset = int64(k)
		buf = f.AppendRequest(buf[:0], req, int32(k))
		if _, err := nc.Write(buf); err != nil {
			b.Error(err)
			return
		}
		if _, err := io.ReadFull(nc, sz[:]); err != nil {
			b.Error(err)
			return
		}
		l := int(binary.BigEndian.Uint32(sz[:]))
		if cap(resp) < l {
			resp = make([]byte, l)
		}
		if _, err := io.ReadFull(nc, resp[:l]); err != nil {
			b.Error(err)
			return
		}
		var r kmsg.OffsetCommitResponse
		r.Version = 8
		if err := r.ReadFrom(resp[5:l]); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Errorf("raw commit: %v %+v", err, r)
			return
		}
	}
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
