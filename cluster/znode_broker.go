package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
)

// BrokerRegistrationVersion is the version of /brokers/ids/N strata writes
// (Kafka's for inter.broker.protocol.version >= 2.7-IV0).
const BrokerRegistrationVersion = 5

// Security protocols by Kafka's id (Endpoint.SecurityProtocol) and name.
var securityProtocolNames = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// SecurityProtocolName is the name of Kafka's security protocol id ("" for
// an unknown one).
func SecurityProtocolName(id int16) string {
	if id < 0 || int(id) >= len(securityProtocolNames) {
		return ""
	}
	return securityProtocolNames[id]
}

// ParseSecurityProtocol is the id of a security protocol name.
func ParseSecurityProtocol(name string) (int16, bool) {
	for i, n := range securityProtocolNames {
		if n == name {
			return int16(i), true
		}
	}
	return 0, false
}

// String is Kafka's connection string of an Endpoint (controller_types.go),
// LISTENER://host:port (an IPv6 host in brackets).
func (e Endpoint) String() string {
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.FormatInt(int64(e.Port), 10))
}

// VersionRange is a feature's supported [Min, Max] versions.
type VersionRange struct{ Min, Max int16 }

// BrokerRegistration is /brokers/ids/N (ephemeral): where broker N listens.
//
//	{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://b1:9092"],
//	 "jmx_port":-1,"features":{},"host":"b1","timestamp":"1700000000000","port":9092,"version":5}
//
// host/port repeat the first PLAINTEXT endpoint (null/-1 when there is none)
// for old clients; rack is present only when broker.rack is set. Encode
// writes version 5; Decode reads versions 1 to 5 (and later ones' known keys).
type BrokerRegistration struct {
	ID        int32 // from the path, not the JSON
	Version   int32 // as decoded; Encode writes BrokerRegistrationVersion
	Endpoints []Endpoint
	Rack      string // "" when none
	JMXPort   int32  // -1 when none
	Timestamp int64  // registration time, Unix ms
	Features  map[string]VersionRange
}

// Encode returns the registration's JSON (version 5).
func (r *BrokerRegistration) Encode() []byte {
	w := &jsonWriter{b: make([]byte, 0, 256)}
	w.open('{')
	w.openObject("listener_security_protocol_map")
	seen := make(map[string]bool, len(r.Endpoints))
	for _, e := range r.Endpoints {
		if !seen[e.Listener] {
			seen[e.Listener] = true
			w.string(e.Listener, SecurityProtocolName(e.SecurityProtocol))
		}
	}
	w.close('}')
	w.key("endpoints")
	w.open('[')
	for _, e := range r.Endpoints {
		w.sep()
		w.b = appendJSONString(w.b, e.String())
	}
	w.close(']')
	w.int("jmx_port", int64(r.JMXPort))
	w.openObject("features")
	for _, name := range sortedKeys(r.Features) {
		f := r.Features[name]
		w.openObject(name)
		w.int("min_version", int64(f.Min))
		w.int("max_version", int64(f.Max))
		w.close('}')
	}
	w.close('}')
	host, port := "", int32(-1)
	hasPlain := false
	for _, e := range r.Endpoints {
		if e.SecurityProtocol == 0 { // PLAINTEXT
			host, port, hasPlain = e.Host, e.Port, true
			break
		}
	}
	if hasPlain {
		w.string("host", host)
	} else {
		w.rawValue("host", "null")
	}
	if r.Rack != "" {
		w.string("rack", r.Rack)
	}
	w.decimal("timestamp", r.Timestamp)
	w.int("port", int64(port))
	w.int("version", BrokerRegistrationVersion)
	w.close('}')
	return w.b
}

// DecodeBrokerRegistration decodes broker id's registration. Keys may come
// in any order and unknown keys are ignored; version, jmx_port and (v2+)
// endpoints are required, as in Kafka. A listener missing from
// listener_security_protocol_map is an error; without the map (v2, v3) a
// listener's name is its security protocol.
func DecodeBrokerRegistration(id int32, data []byte) (BrokerRegistration, error) {
	o := parseObj(BrokerPath(id), data)
	r := BrokerRegistration{ID: id, JMXPort: -1}
	r.Version, _ = o.int32("version", true)
	r.JMXPort, _ = o.int32("jmx_port", true)
	if o.err == nil && r.Version < 1 {
		o.fail("unsupported version %d", r.Version)
	}
	// Kafka never reads the timestamp: a bad one is not worth refusing the
	// broker for, it reads as 0.
	r.Timestamp = o.lenientTimestamp("timestamp")
	if rack, ok := o.str("rack", false); ok {
		r.Rack = rack
	}
	if o.err != nil {
		return BrokerRegistration{}, o.err
	}
	if r.Version == 1 {
		host, _ := o.str("host", true)
		port, _ := o.int32("port", true)
		if o.err == nil && (!validHost(host) || !validPort(int64(port))) {
			o.fail("bad host:port %q:%d", host, port)
		}
		r.Endpoints = []Endpoint{{Listener: "PLAINTEXT", Host: host, Port: port}}
	} else {
		var protocols map[string]string
		if m, ok := o.obj("listener_security_protocol_map", false); ok {
			protocols = make(map[string]string, len(m.m))
			for _, k := range m.keys() {
				protocols[k], _ = m.str(k, true)
			}
			o.merge(m)
		}
		list, _ := o.array("endpoints", true)
		for i, raw := range list {
			s, err := rawString(raw)
			if err != nil {
				o.fail("endpoints[%d]: %v", i, err)
				break
			}
			e, err := ParseEndpoint(s, protocols)
			if err != nil {
				o.fail("endpoints[%d]: %v", i, err)
				break
			}
			r.Endpoints = append(r.Endpoints, e)
		}
	}
	if f, ok := o.obj("features", false); ok {
		r.Features = decodeVersionRanges(f, "min_version", "max_version", true, 0)
		o.merge(f)
	}
	if o.err != nil {
		return BrokerRegistration{}, o.err
	}
	return r, nil
}

// ParseEndpoint parses Kafka's LISTENER://host:port, as Kafka's pattern
// does: the listener is everything before the last "://", the host may be in
// brackets and holds only letters, digits and -%._: (IPv6 and zone ids
// included), the port is -1..65535. protocols maps listener names to
// security protocol names; nil means the listener name is the protocol
// (registrations before v4). An unknown protocol is an error, as in Kafka.
func ParseEndpoint(s string, protocols map[string]string) (Endpoint, error) {
	i := strings.LastIndex(s, "://")
	if i <= 0 {
		return Endpoint{}, fmt.Errorf("endpoint %q: want LISTENER://host:port", s)
	}
	listener, hostport := s[:i], s[i+3:]
	j := strings.LastIndexByte(hostport, ':')
	if j < 0 {
		return Endpoint{}, fmt.Errorf("endpoint %q: no port", s)
	}
	host := hostport[:j]
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if !validHost(host) {
		return Endpoint{}, fmt.Errorf("endpoint %q: bad host", s)
	}
	port, err := strconv.ParseInt(hostport[j+1:], 10, 32)
	if err != nil || !validPort(port) {
		return Endpoint{}, fmt.Errorf("endpoint %q: bad port", s)
	}
	proto := listener
	if protocols != nil {
		p, ok := protocols[listener]
		if !ok {
			return Endpoint{}, fmt.Errorf("endpoint %q: listener %s not in listener_security_protocol_map", s, listener)
		}
		proto = p
	}
	id, ok := ParseSecurityProtocol(proto)
	if !ok {
		return Endpoint{}, fmt.Errorf("endpoint %q: unknown security protocol %q", s, proto)
	}
	return Endpoint{Listener: listener, SecurityProtocol: id, Host: host, Port: int32(port)}, nil
}

func validPort(p int64) bool { return p >= -1 && p <= 65535 }

// validHost is Kafka's endpoint host pattern: [0-9a-zA-Z-%._:]*.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			c == '-' || c == '%' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// decodeVersionRanges reads {"name":{minKey:a,maxKey:b}}; a missing minKey
// is an error when minRequired, else defaultMin.
func decodeVersionRanges(o *jsonObj, minKey, maxKey string, minRequired bool, defaultMin int32) map[string]VersionRange {
	fs := make(map[string]VersionRange, len(o.m))
	for _, name := range o.keys() {
		f, ok := o.obj(name, true)
		if !ok {
			break
		}
		lo, hasMin := f.int32(minKey, minRequired)
		if !hasMin && !minRequired {
			lo = defaultMin
		}
		hi, _ := f.int32(maxKey, true)
		o.merge(f)
		if o.err != nil {
			break
		}
		if lo < -32768 || lo > 32767 || hi < -32768 || hi > 32767 || lo > hi {
			o.fail("feature %q: bad range [%d, %d]", name, lo, hi)
			break
		}
		fs[name] = VersionRange{Min: int16(lo), Max: int16(hi)}
	}
	return fs
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// EncodeClusterID is /cluster/id: {"version":"1","id":"<id>"} (the version
// is a string, as Kafka writes it).
func EncodeClusterID(id string) []byte {
	w := &jsonWriter{}
	w.open('{')
	w.string("version", "1")
	w.string("id", id)
	w.close('}')
	return w.b
}

// DecodeClusterID returns the id in /cluster/id.
func DecodeClusterID(data []byte) (string, error) {
	o := parseObj(ClusterIDPath, data)
	id, _ := o.str("id", true)
	if o.err == nil && id == "" {
		o.fail("empty id")
	}
	return id, o.err
}

// UUIDString is Kafka's Uuid.toString: base64url of the 16 bytes without
// padding (22 characters), the form of topic ids and cluster ids.
func UUIDString(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses Kafka's 22-character base64url uuid.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 22 {
		return u, fmt.Errorf("uuid %q: want 22 base64url characters", s)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("uuid %q: not base64url", s)
	}
	copy(u[:], b)
	return u, nil
}

// NewUUID is Kafka's Uuid.randomUuid: a random version-4 uuid, never the
// zero uuid and never one whose string starts with '-'. rand nil means
// crypto/rand.
func NewUUID(rnd io.Reader) ([16]byte, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	for {
		var u [16]byte
		if _, err := io.ReadFull(rnd, u[:]); err != nil {
			return u, fmt.Errorf("cluster: uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if UUIDString(u)[0] != '-' {
			return u, nil
		}
	}
}
