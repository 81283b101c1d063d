package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Inter-broker messages cross the simulated network as bytes: the sender
// encodes the body with kmsg at the request's version and the receiver
// decodes it into a new struct, as over a socket, so the codec of every
// control request, AlterPartition, Fetch and ListOffsets is exercised
// and no struct is shared between brokers. (The framing is internal/kwire's,
// tested on its own; the simulation carries bodies.)

// wire is an encoded request or response body.
type wire struct {
	key     int16
	version int16
	body    []byte
}

func encodeReq(r kmsg.Request) wire {
	return wire{key: r.Key(), version: r.GetVersion(), body: r.AppendTo(nil)}
}

// decodeReq decodes a request body; an error is a simulation failure (the
// codec could not read what it wrote).
func decodeReq(w wire) (kmsg.Request, error) {
	r := kmsg.RequestForKey(w.key)
	if r == nil {
		return nil, fmt.Errorf("sim: no request for key %d", w.key)
	}
	r.SetVersion(w.version)
	if err := r.ReadFrom(w.body); err != nil {
		return nil, fmt.Errorf("sim: decoding %s v%d: %w", kmsg.NameForKey(w.key), w.version, err)
	}
	return r, nil
}

func encodeResp(r kmsg.Response) wire {
	return wire{key: r.Key(), version: r.GetVersion(), body: r.AppendTo(nil)}
}

func decodeResp(w wire) (kmsg.Response, error) {
	r := kmsg.ResponseForKey(w.key)
	if r == nil {
		return nil, fmt.Errorf("sim: no response for key %d", w.key)
	}
	r.SetVersion(w.version)
	if err := r.ReadFrom(w.body); err != nil {
		return nil, fmt.Errorf("sim: decoding %s response v%d: %w", kmsg.NameForKey(w.key), w.version, err)
	}
	return r, nil
}
