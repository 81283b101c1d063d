package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// channel is the controller's connection to one broker (Kafka's
// ControllerChannelManager queue and RequestSendThread): requests go one at
// a time in Ready order; a request that gets no answer is sent again (a new
// connection) until the broker is removed from the channels (it died or
// bounced: a new epoch gets a new channel) or the controller stops. Each
// result is stepped back as a RequestResult.
type channel struct {
	m      *member
	to     int32
	epoch  int64
	gen    uint64 // the connection: a resend after a timeout uses a new one
	queue  []cluster.Request
	busy   bool
	closed bool
}

// setChannels makes the channels match the live brokers: a new one for a
// new broker or epoch, none for a broker not listed.
func (m *member) setChannels(bs []cluster.Broker) {
	var keep []*channel
	for _, ch := range m.chans {
		i := indexBroker(bs, ch.to)
		if i < 0 || bs[i].Epoch != ch.epoch {
			ch.close()
			continue
		}
		keep = append(keep, ch)
	}
	m.chans = keep
	for _, b := range bs {
		if m.channel(b.ID) == nil {
			m.chanGen++
			m.chans = append(m.chans, &channel{m: m, to: b.ID, epoch: b.Epoch, gen: m.chanGen})
		}
	}
}

func indexBroker(bs []cluster.Broker, id int32) int {
	for i := range bs {
		if bs[i].ID == id {
			return i
		}
	}
	return -1
}

func (m *member) channel(id int32) *channel {
	for _, ch := range m.chans {
		if ch.to == id {
			return ch
		}
	}
	return nil
}

func (m *member) closeChannels() {
	for _, ch := range m.chans {
		ch.close()
	}
	m.chans = nil
}

// enqueue queues a request on its broker's channel; with none (the broker
// is not live for this controller) the request is dropped with an error
// result, as the doc allows.
func (m *member) enqueue(req cluster.Request) {
	ch := m.channel(req.Broker)
	if ch == nil {
		m.tracef("controller: no channel to broker %d: %s dropped", req.Broker, kmsg.NameForKey(req.Msg.Key()))
		m.step(cluster.RequestResult{Request: req.ID, Err: ErrTimeout})
		return
	}
	ch.queue = append(ch.queue, req)
	ch.send()
}

func (ch *channel) close() {
	ch.closed = true
	ch.queue = nil
}

// send sends the head of the queue unless one is in flight.
func (ch *channel) send() {
	if ch.closed || ch.busy || len(ch.queue) == 0 {
		return
	}
	m, s := ch.m, ch.m.s
	req := ch.queue[0]
	ch.busy = true
	w := encodeReq(req.Msg)
	to := s.Brokers[ch.to]
	s.W.Tracef("controller %d -> broker %d: %s", m.b.ID, ch.to, summarizeControl(req.Msg))
	s.Net.Call(Conn{From: m.b.ID, To: ch.to, Kind: ConnControl, Gen: ch.gen}, true, 0,
		func(reply func(any)) { to.serveControl(w, reply) },
		func(resp any, err error) {
			if ch.closed {
				return
			}
			ch.busy = false
			if err != nil {
				// Kafka's RequestSendThread reconnects and sends the same
				// request again, until the broker is removed.
				m.chanGen++
				ch.gen = m.chanGen
				s.W.After(100, ch.send)
				return
			}
			ch.queue = ch.queue[1:]
			r, derr := decodeResp(resp.(wire))
			if derr != nil {
				s.fail("controller %d: %v", m.b.ID, derr)
			}
			m.step(cluster.RequestResult{Request: req.ID, Resp: r, Err: derr})
			ch.send()
		})
}
