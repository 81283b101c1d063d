package server

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The metadata cache of cluster mode (Kafka's MetadataCache): what the
// controller's UpdateMetadata requests say — the live brokers with their
// endpoints and racks, every partition's leader, leader epoch, replicas,
// ISR and offline replicas, the topic ids, the controller. Every Metadata,
// DescribeCluster and FindCoordinator answer comes from it.
//
// An image is immutable: an update builds a new one (sharing the topics it
// does not touch) and swaps it in, so readers take no lock. Each image
// carries, per listener name of this broker, the Metadata response's
// broker list and topics already built, so a Metadata request copies
// nothing: its cost does not grow with the requests served, and it
// allocates only the response around them.

// metadataImage is one version of the cache.
type metadataImage struct {
	controllerID    int32
	controllerEpoch int32
	brokers         []metaBroker // sorted by id
	topics          map[string]*metaTopic
	byID            map[[16]byte]string
	views           map[string]*metadataView // by listener name
}

// metaBroker is a live broker.
type metaBroker struct {
	id        int32
	rack      *string
	endpoints []Listener
}

func (b *metaBroker) endpoint(listener string) (Listener, bool) {
	for _, e := range b.endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return Listener{}, false
}

// metaTopic is a topic's partitions; parts[p].present is false for a
// partition the cache has no state for.
type metaTopic struct {
	name  string
	id    [16]byte
	parts []metaPartition
}

type metaPartition struct {
	present                        bool
	leader, leaderEpoch, zkVersion int32
	replicas, isr, offlineReplicas []int32
}

// metadataView is the Metadata response's content for clients of one
// listener: brokers as their endpoint on it, each topic built.
type metadataView struct {
	brokers []kmsg.MetadataResponseBroker
	topics  map[string]*kmsg.MetadataResponseTopic
	all     []kmsg.MetadataResponseTopic // sorted by name: the answer for every topic
}

// broker returns a live broker.
func (im *metadataImage) broker(id int32) (*metaBroker, bool) {
	i, ok := slices.BinarySearchFunc(im.brokers, id, func(b metaBroker, id int32) int { return int(b.id) - int(id) })
	if !ok {
		return nil, false
	}
	return &im.brokers[i], true
}

// alive reports whether broker id is live.
func (im *metadataImage) alive(id int32) bool {
	_, ok := im.broker(id)
	return ok
}

// partition returns a partition's state.
func (im *metadataImage) partition(topic string, p int32) (*metaPartition, bool) {
	t := im.topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.parts) || !t.parts[p].present {
		return nil, false
	}
	return &t.parts[p], true
}

// view is the prebuilt Metadata content for listener, nil for a listener
// this broker does not have.
func (im *metadataImage) view(listener string) *metadataView { return im.views[listener] }

// imageStore holds the current image and wakes waiters on change.
type imageStore struct {
	cur       atomic.Pointer[metadataImage]
	mu        sync.Mutex // serializes updates
	changed   chan struct{}
	listeners []string // this broker's listener names: the views built
}

func (st *imageStore) init(listeners []string) {
	st.listeners = listeners
	st.changed = make(chan struct{})
	im := &metadataImage{controllerID: -1, controllerEpoch: -1, topics: map[string]*metaTopic{}, byID: map[[16]byte]string{}}
	im.buildViews(st.listeners, nil)
	st.cur.Store(im)
}

func (st *imageStore) load() *metadataImage { return st.cur.Load() }

// wait returns a channel closed at the next change.
func (st *imageStore) wait() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.changed
}

// apply builds the next image from an UpdateMetadata request (Kafka's
// MetadataCache.updateMetadata): the live brokers are replaced, partition
// states upserted, partitions announced with leader -2 (their topic being
// deleted) removed, topics left without partitions forgotten.
func (st *imageStore) apply(req *kmsg.UpdateMetadataRequest) {
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.cur.Load()
	im := &metadataImage{controllerID: req.ControllerID, controllerEpoch: req.ControllerEpoch,
		topics: make(map[string]*metaTopic, len(old.topics)), byID: make(map[[16]byte]string, len(old.byID))}
	for _, lb := range req.LiveBrokers {
		b := metaBroker{id: lb.ID, rack: lb.Rack}
		if req.Version == 0 {
			b.endpoints = []Listener{{Name: "PLAINTEXT", Host: lb.Host, Port: lb.Port}}
		}
		for _, e := range lb.Endpoints {
			name := e.ListenerName
			if req.Version < 3 || name == "" {
				name = protocolName(e.SecurityProtocol)
			}
			b.endpoints = append(b.endpoints, Listener{Name: name, Host: e.Host, Port: e.Port})
		}
		im.brokers = append(im.brokers, b)
	}
	sort.Slice(im.brokers, func(i, j int) bool { return im.brokers[i].id < im.brokers[j].id })
	im.brokers = slices.CompactFunc(im.brokers, func(a, b metaBroker) bool { return a.id == b.id })
	for k, v := range old.topics {
		im.topics[k] = v
	}
	changed := map[string]bool{}
	touch := func(name string) *metaTopic {
		t := im.topics[name]
		if !changed[name] {
			changed[name] = true
			nt := &metaTopic{name: name}
			if t != nil {
				nt.id, nt.parts = t.id, slices.Clone(t.parts)
			}
			t = nt
			im.topics[name] = t
		}
		return t
	}
	set := func(t *metaTopic, ps *kmsg.UpdateMetadataRequestTopicPartition) {
		if ps.Partition < 0 {
			return
		}
		if ps.Leader == -2 { // the topic is being deleted
			if int(ps.Partition) < len(t.parts) {
				t.parts[ps.Partition] = metaPartition{}
			}
			return
		}
		for int(ps.Partition) >= len(t.parts) {
			t.parts = append(t.parts, metaPartition{})
		}
		t.parts[ps.Partition] = metaPartition{present: true, leader: ps.Leader, leaderEpoch: ps.LeaderEpoch, zkVersion: ps.ZKVersion,
			replicas: ps.Replicas, isr: ps.ISR, offlineReplicas: ps.OfflineReplicas}
	}
	for i := range req.PartitionStates {
		ps := &req.PartitionStates[i]
		set(touch(ps.Topic), ps)
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		t := touch(ts.Topic)
		if ts.TopicID != ([16]byte{}) {
			t.id = ts.TopicID
		}
		for j := range ts.PartitionStates {
			set(t, &ts.PartitionStates[j])
		}
	}
	for name := range changed {
		t := im.topics[name]
		for len(t.parts) > 0 && !t.parts[len(t.parts)-1].present {
			t.parts = t.parts[:len(t.parts)-1]
		}
		if len(t.parts) == 0 {
			delete(im.topics, name)
		}
	}
	for name, t := range im.topics {
		if t.id != ([16]byte{}) {
			im.byID[t.id] = name
		}
	}
	im.buildViews(st.listeners, old)
	st.cur.Store(im)
	close(st.changed)
	st.changed = make(chan struct{})
}

// protocolName is a security protocol's name (listener names default to
// it before UpdateMetadata v3).
func protocolName(id int16) string {
	switch id {
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return "PLAINTEXT"
}

// buildViews builds the per-listener Metadata content; topics whose state
// and whose leaders' liveness did not change keep old's built entries.
func (im *metadataImage) buildViews(listeners []string, old *metadataImage) {
	im.views = make(map[string]*metadataView, len(listeners))
	sameBrokers := old != nil && slices.EqualFunc(old.brokers, im.brokers, func(a, b metaBroker) bool {
		return a.id == b.id && slices.Equal(a.endpoints, b.endpoints) && (a.rack == nil) == (b.rack == nil) && (a.rack == nil || *a.rack == *b.rack)
	})
	names := make([]string, 0, len(im.topics))
	for name := range im.topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, l := range listeners {
		v := &metadataView{topics: make(map[string]*kmsg.MetadataResponseTopic, len(im.topics)), all: make([]kmsg.MetadataResponseTopic, 0, len(names))}
		for i := range im.brokers {
			b := &im.brokers[i]
			e, ok := b.endpoint(l)
			if !ok {
				continue // no endpoint on this listener: not listed to its clients, as Kafka
			}
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port, mb.Rack = b.id, e.Host, e.Port, b.rack
			v.brokers = append(v.brokers, mb)
		}
		var ov *metadataView
		if old != nil && sameBrokers {
			ov = old.views[l]
		}
		for _, name := range names {
			t := im.topics[name]
			if ov != nil && old.topics[name] == t {
				if mt := ov.topics[name]; mt != nil {
					v.topics[name] = mt
					v.all = append(v.all, *mt)
					continue
				}
			}
			mt := im.buildTopic(t, l)
			v.topics[name] = mt
			v.all = append(v.all, *mt)
		}
		im.views[l] = v
	}
}

// buildTopic is a topic's Metadata entry for clients of listener: a
// partition whose leader is not live is LEADER_NOT_AVAILABLE, one whose
// leader has no endpoint on the listener LISTENER_NOT_FOUND (leader -1 in
// both, as Kafka).
func (im *metadataImage) buildTopic(t *metaTopic, listener string) *kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = t.name == OffsetsTopic
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.parts))
	for p := range t.parts {
		mp := &t.parts[p]
		if !mp.present {
			continue
		}
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition, rp.Leader, rp.LeaderEpoch = int32(p), mp.leader, mp.leaderEpoch
		rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.replicas, mp.isr, mp.offlineReplicas
		if rp.OfflineReplicas == nil {
			rp.OfflineReplicas = []int32{}
		}
		b, ok := im.broker(mp.leader)
		switch {
		case !ok:
			rp.ErrorCode, rp.Leader = kerr.LeaderNotAvailable.Code, -1
		default:
			if _, ok := b.endpoint(listener); !ok {
				rp.ErrorCode, rp.Leader = kerr.ListenerNotFound.Code, -1
			}
		}
		mt.Partitions = append(mt.Partitions, rp)
	}
	return &mt
}

// led reports whether every partition of topic has a live leader, and the
// number of partitions the cache knows.
func (im *metadataImage) led(topic string) (bool, int) {
	t := im.topics[topic]
	if t == nil {
		return false, 0
	}
	n := 0
	for i := range t.parts {
		if !t.parts[i].present || !im.alive(t.parts[i].leader) {
			return false, n
		}
		n++
	}
	return true, n
}
