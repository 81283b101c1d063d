package server

import "net"

// endpoint is what a single node tells a client that came in on listener
// to dial: the advertised endpoint of that listener name (a client on the
// SSL listener is sent to the SSL port, as Kafka answers per listener),
// else the first advertised one.
func (s *Server) endpoint(listener string) Listener {
	for _, l := range s.advertisedAll {
		if l.Name == listener {
			return l
		}
	}
	return s.advertised
}

// ListenerAddr is the bound address of the listener called name (nil when
// there is none).
func (s *Server) ListenerAddr(name string) net.Addr {
	for i, l := range s.cfg.Listeners {
		if l.Name == name {
			return s.listeners[i].Addr()
		}
	}
	return nil
}
