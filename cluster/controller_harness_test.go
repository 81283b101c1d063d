package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// world is a fake ZooKeeper, the controller of broker ctrlID, and the
// driver loop between them as the package doc prescribes: writes applied
// one at a time and acknowledged, requests answered by simulated brokers.
type world struct {
	t       testing.TB
	zk      *fakeZK
	c       *Controller
	id      int32
	rnd     *rand.Rand
	sent    []Request // every request released, in order
	replies []Reply
	logs    []string
	// storageErr[b] lists partitions broker b answers KAFKA_STORAGE_ERROR for.
	storageErr map[int32][]TopicPartition
	// stopErr[b]: broker b answers StopReplica with this error.
	stopErr map[int32]int16
	// manualResponses: requests are not answered by drive; pending holds them.
	manualResponses bool
	pending         []Request
	resigned        bool
	reloads         int
	// check runs after every step.
	check func()
}

func newWorld(t testing.TB, id int32, opts *ControllerOptions) *world {
	w := &world{t: t, zk: newFakeZK(), id: id, rnd: rand.New(rand.NewPCG(1, 2)),
		storageErr: map[int32][]TopicPartition{}, stopErr: map[int32]int16{}}
	w.c = NewController(id, opts)
	return w
}

func registration(id int32, rack string) []byte {
	s := fmt.Sprintf(`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://b%d:%d"],"jmx_port":-1,"port":%d,"host":"b%d","version":5,"timestamp":"1700000000000"`,
		id, 9090+id, 9090+id, id)
	if rack != "" {
		s += fmt.Sprintf(`,"rack":%q`, rack)
	}
	return []byte(s + "}")
}

func (w *world) register(ids ...int32) {
	for _, id := range ids {
		w.zk.mustCreate(ctrlBrokerPath(id), registration(id, ""), Ephemeral)
	}
}

func (w *world) kill(ids ...int32) {
	for _, id := range ids {
		if err := w.zk.Delete(ctrlBrokerPath(id), -1); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) epochOf(id int32) int64 {
	_, st, err := w.zk.Get(ctrlBrokerPath(id))
	if err != nil {
		w.t.Fatal(err)
	}
	return st.Czxid
}

// createTopic writes a topic as an admin does: config first, then the
// assignment, with a random topic id.
func (w *world) createTopic(name string, replicas [][]int32, configs map[string]string) [16]byte {
	var id [16]byte
	for i := range id {
		id[i] = byte(w.rnd.IntN(256))
	}
	cfg := `{"version":1,"config":{`
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			cfg += ","
		}
		cfg += fmt.Sprintf("%q:%q", k, configs[k])
	}
	w.zk.mustCreate(ctrlTopicConfigPath(name), []byte(cfg+"}}"), Persistent)
	w.zk.mustCreate(ctrlTopicPath(name), appendAssignmentJSON(nil, id, replicas), Persistent)
	return id
}

// elect makes the controller's broker win the election as the driver
// would: /controller created and /controller_epoch bumped, then a
// snapshot loaded and activated.
func (w *world) elect() {
	if ok, _, _ := w.zk.Exists(ctrlControllerEpochPath); !ok {
		w.zk.mustCreate(ctrlControllerEpochPath, []byte("0"), Persistent)
	}
	data, st, _ := w.zk.Get(ctrlControllerEpochPath)
	epoch, _ := strconv.Atoi(string(data))
	if ok, _, _ := w.zk.Exists(ctrlControllerPath); ok {
		_ = w.zk.Delete(ctrlControllerPath, -1)
	}
	fail := w.zk.failNext // an injected failure is for the controller's writes
	w.zk.failNext = nil
	defer func() { w.zk.failNext = fail }()
	_, err := w.zk.Multi(
		Op{Kind: OpCreate, Path: ctrlControllerPath, Data: []byte(fmt.Sprintf(`{"version":1,"brokerid":%d,"timestamp":"1"}`, w.id)), Mode: Ephemeral},
		Op{Kind: OpSet, Path: ctrlControllerEpochPath, Data: []byte(strconv.Itoa(epoch + 1)), Version: st.Version},
	)
	if err != nil {
		w.t.Fatal(err)
	}
	w.resigned = false
	w.activate()
}

func (w *world) activate() {
	s, err := LoadSnapshot(w.zk, w.id)
	if err != nil {
		w.t.Fatalf("load: %v", err)
	}
	w.step(Activate{Snapshot: s})
}

// step applies an event and drives the controller until it has nothing
// left to do.
func (w *world) step(ev Event) {
	w.c.Step(ev)
	w.drive()
}

func (w *world) drive() {
	for {
		rd := w.c.Ready()
		if rd.Empty() {
			return
		}
		w.logs = append(w.logs, rd.Log...)
		if w.check != nil {
			w.checkReady(&rd)
		}
		for _, b := range rd.Writes {
			res, err := w.zk.Multi(b.Ops...)
			w.c.Step(WriteResult{Batch: b.ID, Results: res, Err: err})
			if err != nil {
				break
			}
		}
		w.replies = append(w.replies, rd.Replies...)
		for _, r := range rd.Requests {
			w.sent = append(w.sent, r)
			if w.manualResponses {
				w.pending = append(w.pending, r)
			} else {
				w.c.Step(w.respond(r))
			}
		}
		if rd.Resigned {
			w.resigned = true
		}
		if rd.Reload {
			w.reloads++
			w.activate()
			return
		}
		if w.check != nil {
			w.check()
		}
	}
}

// checkReady: every write batch is fenced by the current epoch version,
// every request carries the current controller epoch.
func (w *world) checkReady(rd *Ready) {
	epoch, ver := w.c.Epoch()
	for _, b := range rd.Writes {
		if op := b.Ops[0]; len(b.Ops) < 2 || op.Kind != OpCheck || op.Path != ctrlControllerEpochPath || op.Version != ver {
			w.t.Fatalf("write batch %d does not start with the epoch check at version %d: %+v", b.ID, ver, b.Ops[0])
		}
	}
	for _, r := range rd.Requests {
		var ce int32
		switch m := r.Msg.(type) {
		case *kmsg.LeaderAndISRRequest:
			ce = m.ControllerEpoch
		case *kmsg.UpdateMetadataRequest:
			ce = m.ControllerEpoch
		case *kmsg.StopReplicaRequest:
			ce = m.ControllerEpoch
		}
		if ce != epoch {
			w.t.Fatalf("request %d to broker %d carries controller epoch %d, controller is at %d", r.ID, r.Broker, ce, epoch)
		}
	}
}

// respond answers a request as a healthy broker would, with the storage
// and StopReplica errors configured.
func (w *world) respond(r Request) RequestResult {
	switch m := r.Msg.(type) {
	case *kmsg.LeaderAndISRRequest:
		resp := kmsg.NewPtrLeaderAndISRResponse()
		resp.Version = m.Version
		for _, ts := range m.TopicStates {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = ts.TopicID
			for _, ps := range ts.PartitionStates {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition = ps.Partition
				if slices.Contains(w.storageErr[r.Broker], TopicPartition{ts.Topic, ps.Partition}) {
					rp.ErrorCode = errKafkaStorage
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return RequestResult{Request: r.ID, Resp: resp}
	case *kmsg.StopReplicaRequest:
		resp := kmsg.NewPtrStopReplicaResponse()
		resp.Version = m.Version
		for _, ts := range m.Topics {
			for _, ps := range ts.PartitionStates {
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition, rp.ErrorCode = ts.Topic, ps.Partition, w.stopErr[r.Broker]
				resp.Partitions = append(resp.Partitions, rp)
			}
		}
		return RequestResult{Request: r.ID, Resp: resp}
	case *kmsg.UpdateMetadataRequest:
		resp := kmsg.NewPtrUpdateMetadataResponse()
		resp.Version = m.Version
		return RequestResult{Request: r.ID, Resp: resp}
	}
	return RequestResult{Request: r.ID, Err: errors.New("unknown request")}
}

// Events read from the fake ZooKeeper, as the driver makes them.

func (w *world) brokersEvent() BrokersChanged {
	s, err := LoadSnapshot(w.zk, w.id)
	if err != nil {
		w.t.Fatal(err)
	}
	return BrokersChanged{Brokers: s.Brokers}
}

func (w *world) topicsEvent() TopicsChanged {
	names, _ := children(w.zk, ctrlTopicsPath)
	slices.Sort(names)
	var ev TopicsChanged
	for _, n := range names {
		ts, skip, err := loadTopic(w.zk, n)
		if err != nil || skip != "" {
			w.t.Fatal(err, skip)
		}
		if ts != nil {
			ev.Topics = append(ev.Topics, ts.Topic)
		}
	}
	return ev
}

func (w *world) deletionsEvent() DeletionsRequested {
	names, _ := children(w.zk, ctrlDeleteTopicsPath)
	return DeletionsRequested{Topics: names}
}

// state is partition tp's state in the controller's view, as text.
func (w *world) state(topic string, p int32) string {
	t := w.c.topics[topic]
	if t == nil || int(p) >= len(t.parts) {
		return "unknown"
	}
	if !t.parts[p].hasState {
		return "none"
	}
	return fmtState(&t.parts[p].st)
}

func fmtState(s *PartitionState) string {
	return fmt.Sprintf("leader=%d epoch=%d isr=%v v=%d", s.Leader, s.LeaderEpoch, s.ISR, s.Version)
}

// zkState is partition tp's state znode, as text.
func (w *world) zkState(topic string, p int32) string {
	data, st, err := w.zk.Get(ctrlStatePath(topic, p))
	if errors.Is(err, ErrNoNode) {
		return "none"
	}
	s, err := DecodePartitionState(topic, p, data)
	if err != nil {
		w.t.Fatal(err)
	}
	s.Version = st.Version
	return fmtState(&s)
}

// since returns the requests released from index i on, summarised one per
// line, and the new index.
func (w *world) since(i int) ([]string, int) {
	var out []string
	for _, r := range w.sent[i:] {
		out = append(out, describeRequest(r))
	}
	return out, len(w.sent)
}

// describeRequest summarises a request: kind, broker, and per partition
// leader/epoch/isr/version (LeaderAndIsr: "new" when is_new; UpdateMetadata:
// offline replicas; StopReplica: "del" when deleting).
func describeRequest(r Request) string {
	var b strings.Builder
	switch m := r.Msg.(type) {
	case *kmsg.LeaderAndISRRequest:
		fmt.Fprintf(&b, "lisr->%d", r.Broker)
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d:L%d/E%d/%v/v%d", ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion)
				if ps.IsNew {
					b.WriteString("/new")
				}
			}
		}
	case *kmsg.UpdateMetadataRequest:
		fmt.Fprintf(&b, "um->%d brokers=", r.Broker)
		for i, lb := range m.LiveBrokers {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Itoa(int(lb.ID)))
		}
		for _, ts := range m.TopicStates {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d:L%d/E%d/%v/v%d", ts.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion)
				if len(ps.OfflineReplicas) > 0 {
					fmt.Fprintf(&b, "/off%v", ps.OfflineReplicas)
				}
			}
		}
	case *kmsg.StopReplicaRequest:
		fmt.Fprintf(&b, "stop->%d", r.Broker)
		for _, ts := range m.Topics {
			for _, ps := range ts.PartitionStates {
				fmt.Fprintf(&b, " %s-%d:E%d", ts.Topic, ps.Partition, ps.LeaderEpoch)
				if ps.Delete {
					b.WriteString("/del")
				}
			}
		}
	}
	return b.String()
}

func wantLines(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func wantState(t testing.TB, w *world, topic string, p int32, want string) {
	t.Helper()
	if got := w.state(topic, p); got != want {
		t.Fatalf("%s-%d: controller has %s, want %s", topic, p, got, want)
	}
	if got := w.zkState(topic, p); got != want {
		t.Fatalf("%s-%d: ZooKeeper has %s, want %s", topic, p, got, want)
	}
}

func brokerEpochOf(r Request) int64 {
	switch m := r.Msg.(type) {
	case *kmsg.LeaderAndISRRequest:
		return m.BrokerEpoch
	case *kmsg.UpdateMetadataRequest:
		return m.BrokerEpoch
	case *kmsg.StopReplicaRequest:
		return m.BrokerEpoch
	}
	return -1
}
