package cluster

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// This file holds the small JSON reader and writer the znode codecs share.
// The writer emits compact JSON in a fixed key order, escaping as Jackson
// does (no HTML escaping). The reader takes keys in any order, ignores keys
// it does not know, and is strict about the types of the keys it reads:
// integers are integer literals in range (no fractions, no exponents, no
// quotes), strings are strings, null is never silently a zero.

// jsonObj reads one JSON object; the first error sticks (check err once).
type jsonObj struct {
	path string
	m    map[string]json.RawMessage
	err  error
}

// parseObj parses data as a JSON object; path names the znode in errors.
func parseObj(path string, data []byte) *jsonObj {
	o := &jsonObj{path: path}
	if len(data) == 0 {
		o.err = badZnode(path, "empty data, want a JSON object")
		return o
	}
	if err := json.Unmarshal(data, &o.m); err != nil {
		o.err = badZnode(path, "not a JSON object: %v", err)
		return o
	}
	if o.m == nil { // the literal null
		o.err = badZnode(path, "null, want a JSON object")
	}
	return o
}

func badZnode(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadZnode, path, fmt.Sprintf(format, args...))
}

func (o *jsonObj) fail(format string, args ...any) {
	if o.err == nil {
		o.err = badZnode(o.path, format, args...)
	}
}

// raw returns key's value; absent and null both report false.
func (o *jsonObj) raw(key string, required bool) (json.RawMessage, bool) {
	if o.err != nil {
		return nil, false
	}
	v, ok := o.m[key]
	if !ok || isNull(v) {
		if required {
			o.fail("%q missing", key)
		}
		return nil, false
	}
	return v, true
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

// int32 reads an integer key that fits 32 bits.
func (o *jsonObj) int32(key string, required bool) (int32, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return 0, false
	}
	n, err := parseInt(v, 32)
	if err != nil {
		o.fail("%q: %v", key, err)
		return 0, false
	}
	return int32(n), true
}

// str reads a string key.
func (o *jsonObj) str(key string, required bool) (string, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return "", false
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		o.fail("%q: want a string, have %s", key, clip(v))
		return "", false
	}
	return s, true
}

// decimalString reads an integer written as a string ("1700000000000");
// lenient reads also accept a number.
func (o *jsonObj) decimalString(key string, required, lenient bool) (int64, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return 0, false
	}
	if v[0] != '"' {
		if lenient {
			if n, err := parseInt(v, 64); err == nil {
				return n, true
			}
		}
		o.fail("%q: want a decimal string, have %s", key, clip(v))
		return 0, false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.fail("%q: %v", key, err)
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		o.fail("%q: want a decimal string, have %q", key, s)
		return 0, false
	}
	return n, true
}

// lenientTimestamp reads a timestamp written as a decimal string or a
// number; anything else (or nothing) is 0 and no error.
func (o *jsonObj) lenientTimestamp(key string) int64 {
	if o.err != nil {
		return 0
	}
	v, ok := o.m[key]
	if !ok || isNull(v) {
		return 0
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0
		}
		v = json.RawMessage(s)
	}
	n, err := parseInt(v, 64)
	if err != nil {
		return 0
	}
	return n
}

// int32s reads an array of integers.
func (o *jsonObj) int32s(key string, required bool) ([]int32, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return nil, false
	}
	ns, err := parseInt32s(v)
	if err != nil {
		o.fail("%q: %v", key, err)
		return nil, false
	}
	return ns, true
}

// obj reads a nested object.
func (o *jsonObj) obj(key string, required bool) (*jsonObj, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return nil, false
	}
	sub := &jsonObj{path: o.path}
	if v[0] != '{' || json.Unmarshal(v, &sub.m) != nil {
		o.fail("%q: want an object, have %s", key, clip(v))
		return nil, false
	}
	return sub, true
}

// array reads an array of raw values.
func (o *jsonObj) array(key string, required bool) ([]json.RawMessage, bool) {
	v, ok := o.raw(key, required)
	if !ok {
		return nil, false
	}
	var a []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &a) != nil {
		o.fail("%q: want an array, have %s", key, clip(v))
		return nil, false
	}
	return a, true
}

// keys returns the object's keys sorted, so decoders never depend on map
// order.
func (o *jsonObj) keys() []string {
	ks := make([]string, 0, len(o.m))
	for k := range o.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sub parses an element of an array as an object.
func (o *jsonObj) sub(what string, v json.RawMessage) *jsonObj {
	s := &jsonObj{path: o.path}
	if o.err != nil {
		s.err = o.err
		return s
	}
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &s.m) != nil {
		o.fail("%s: want an object, have %s", what, clip(v))
		s.err = o.err
	}
	return s
}

// merge carries a nested object's error up.
func (o *jsonObj) merge(sub *jsonObj) {
	if sub != nil && sub.err != nil && o.err == nil {
		o.err = sub.err
	}
}

// parseInt parses a JSON integer literal of the given bit size.
func parseInt(v json.RawMessage, bits int) (int64, error) {
	s := string(v)
	if s == "" {
		return 0, fmt.Errorf("want an integer, have nothing")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			return 0, fmt.Errorf("want an integer, have %s", clip(v))
		}
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("want a %d-bit integer, have %s", bits, clip(v))
	}
	return n, nil
}

// rawString decodes a JSON string value.
func rawString(v json.RawMessage) (string, error) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("want a string, have %s", clip(v))
	}
	return s, nil
}

func parseInt32s(v json.RawMessage) ([]int32, error) {
	var a []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &a) != nil {
		return nil, fmt.Errorf("want an array of integers, have %s", clip(v))
	}
	ns := make([]int32, len(a))
	for i, e := range a {
		n, err := parseInt(e, 32)
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		ns[i] = int32(n)
	}
	return ns, nil
}

// clip shortens a raw value for an error message.
func clip(v []byte) string {
	const max = 40
	if len(v) > max {
		return strconv.Quote(string(v[:max])) + "..."
	}
	return strconv.Quote(string(v))
}

// jsonWriter appends one compact JSON object, keys in call order.
type jsonWriter struct {
	b     []byte
	first []bool // per open object/array: no element yet
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.first = append(w.first, true)
}

func (w *jsonWriter) close(c byte) {
	w.b = append(w.b, c)
	w.first = w.first[:len(w.first)-1]
}

func (w *jsonWriter) sep() {
	if n := len(w.first); n > 0 {
		if !w.first[n-1] {
			w.b = append(w.b, ',')
		}
		w.first[n-1] = false
	}
}

func (w *jsonWriter) key(k string) {
	w.sep()
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *jsonWriter) rawValue(key string, v string) {
	w.key(key)
	w.b = append(w.b, v...)
}

func (w *jsonWriter) int(key string, n int64) {
	w.key(key)
	w.b = strconv.AppendInt(w.b, n, 10)
}

func (w *jsonWriter) string(key, s string) {
	w.key(key)
	w.b = appendJSONString(w.b, s)
}

// decimal writes n as a decimal string, as Kafka writes timestamps.
func (w *jsonWriter) decimal(key string, n int64) {
	w.key(key)
	w.b = append(w.b, '"')
	w.b = strconv.AppendInt(w.b, n, 10)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) int32s(key string, ns []int32) {
	w.key(key)
	w.b = appendInt32s(w.b, ns)
}

func (w *jsonWriter) openObject(key string) {
	w.key(key)
	w.open('{')
}

func (w *jsonWriter) openArray(key string) {
	w.key(key)
	w.open('[')
}

// element starts an array element (an object).
func (w *jsonWriter) element() {
	w.sep()
	w.open('{')
}

func appendInt32s(b []byte, ns []int32) []byte {
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, everything
// else as is (Jackson's default).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
