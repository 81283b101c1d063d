package kwire

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// reqFrame is one request as a fake broker read it.
type reqFrame struct {
	key, version int16
	corr         int32
	clientID     *string // nil: null, or absent for header v0
	rest         []byte  // after client id
}

// fake is a tiny broker: it reads request frames and lets a test answer
// them with whatever bytes it likes.
type fake struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	reqs []reqFrame
}

// startFake serves each connection with handle, called per request frame
// until it returns false (then the connection is closed).
func startFake(t *testing.T, handle func(c net.Conn, r reqFrame) bool) *fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				buf := make([]byte, 0, 4096)
				for {
					var hdr [4]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(hdr[:]))
					if cap(buf) < n {
						buf = make([]byte, n)
					}
					buf = buf[:n]
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					r := reqFrame{key: int16(binary.BigEndian.Uint16(buf)), version: int16(binary.BigEndian.Uint16(buf[2:])),
						corr: int32(binary.BigEndian.Uint32(buf[4:])), rest: buf[8:]}
					if !(r.key == 7 && r.version == 0) {
						l := int16(binary.BigEndian.Uint16(buf[8:]))
						r.rest = buf[10:]
						if l >= 0 {
							s := string(buf[10 : 10+int(l)])
							r.clientID = &s
							r.rest = buf[10+int(l):]
						}
					}
					f.mu.Lock()
					f.reqs = append(f.reqs, reqFrame{key: r.key, version: r.version, corr: r.corr, clientID: r.clientID,
						rest: append([]byte(nil), r.rest...)})
					f.mu.Unlock()
					if !handle(c, r) {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fake) addr() string { return f.ln.Addr().String() }

func (f *fake) requests() []reqFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]reqFrame(nil), f.reqs...)
}

// frame builds a response frame: size, correlation id, then body.
func frame(corr int32, body ...[]byte) []byte {
	n := 4
	for _, b := range body {
		n += len(b)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(n))
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}
