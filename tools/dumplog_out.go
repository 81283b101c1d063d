package tools

import (
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"unicode/utf8"
)

// out buffers a tool's data output and writes it in large chunks. Lines are
// appended by hand (strconv, no reflection): dumplog prints millions of them.
// The first write error is kept and reported by flush.
type out struct {
	w   io.Writer
	buf []byte
	err error
}

func newOut(w io.Writer) *out { return &out{w: w, buf: make([]byte, 0, 256<<10)} }

// line ends the current line and writes the buffer when it is large.
func (o *out) line() {
	o.buf = append(o.buf, '\n')
	if len(o.buf) >= 192<<10 {
		o.flush()
	}
}

func (o *out) flush() error {
	if len(o.buf) > 0 && o.err == nil {
		_, o.err = o.w.Write(o.buf)
	}
	o.buf = o.buf[:0]
	return o.err
}

// str, int, ... append text to the current line.
func (o *out) str(s string) *out  { o.buf = append(o.buf, s...); return o }
func (o *out) int(v int64) *out   { o.buf = strconv.AppendInt(o.buf, v, 10); return o }
func (o *out) uint(v uint64) *out { o.buf = strconv.AppendUint(o.buf, v, 10); return o }
func (o *out) bool(v bool) *out   { o.buf = strconv.AppendBool(o.buf, v); return o }

// jstr appends s as a JSON string.
func (o *out) jstr(s string) *out { o.buf = appendJSONString(o.buf, s); return o }

// appendJSONString appends s quoted and escaped as JSON. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// dataEncoding renders keys and payloads for --print-data.
type dataEncoding int

const (
	encText dataEncoding = iota
	encHex
	encBase64
)

func parseDataEncoding(s string) (dataEncoding, bool) {
	switch s {
	case "text", "":
		return encText, true
	case "hex":
		return encHex, true
	case "base64":
		return encBase64, true
	}
	return 0, false
}

// appendData appends b rendered in e. Text keeps printable UTF-8 and escapes
// everything else (control bytes, invalid UTF-8, backslash) as \xNN, so the
// output stays on one line and is unambiguous.
func appendData(dst []byte, b []byte, e dataEncoding) []byte {
	switch e {
	case encHex:
		return hex.AppendEncode(dst, b)
	case encBase64:
		return base64.StdEncoding.AppendEncode(dst, b)
	}
	const hexDigits = "0123456789abcdef"
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c < 0x7f && c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[i:])
			if !(r == utf8.RuneError && size == 1) && strconv.IsPrint(r) {
				dst = append(dst, b[i:i+size]...)
				i += size
				continue
			}
		}
		dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		i++
	}
	return dst
}

// jdata appends b as a JSON string in encoding e, or null for nil.
func (o *out) jdata(b []byte, e dataEncoding, scratch *[]byte) *out {
	if b == nil {
		o.buf = append(o.buf, "null"...)
		return o
	}
	if e != encText {
		o.buf = append(o.buf, '"')
		o.buf = appendData(o.buf, b, e)
		o.buf = append(o.buf, '"')
		return o
	}
	// Text rendering leaves only printable, valid UTF-8: JSON needs just the
	// quote and the backslash escaped.
	*scratch = appendData((*scratch)[:0], b, e)
	o.buf = append(o.buf, '"')
	for _, c := range *scratch {
		if c == '"' || c == '\\' {
			o.buf = append(o.buf, '\\')
		}
		o.buf = append(o.buf, c)
	}
	o.buf = append(o.buf, '"')
	return o
}
