package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"weak"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Streaming decompression: a records section read through a small window
// instead of into one buffer of its decompressed size, for validating what
// producers send (StreamValidator) and recompressing it. What a stream holds
// at once is bounded by its own headers, whatever it expands to
// (StreamMemory):
//
//	gzip    the deflate window and tables (gzipStreamMemory)
//	snappy  one decoded chunk of the xerial framing (a raw block: the whole
//	        block, at most maxSnappyRatio times its compressed size)
//	lz4     two blocks of the frames' maximum block size (64 KiB to 4 MiB)
//	zstd    the frame's window (at most MaxStreamWindow) and two blocks

// MaxStreamWindow is the largest zstd window a stream may declare: zstd's
// default decoder limit (window log 27), which is also what Kafka's zstd-jni
// decoder accepts. Producers at zstd levels up to 19 use at most 8 MiB.
const MaxStreamWindow = 1 << 27

const (
	// gzipStreamMemory is a generous bound of a pooled gzip reader: the
	// 32 KiB deflate window plus the decoder's Huffman tables and state.
	gzipStreamMemory = 64 << 10
	// zstdBlockMemory covers the decoder's block buffers and tables.
	zstdBlockMemory = 2*zstdMaxBlock + 64<<10
	zstdMaxBlock    = 128 << 10
	// zstdPoolWindow: decoders that ran a larger window are pooled apart
	// (zstdWideStreams).
	zstdPoolWindow = 8 << 20
	// maxSnappyRatio bounds a snappy block's decoded length by its encoded
	// length: the densest element, a 3-byte copy of 64 bytes, expands 21.3x.
	maxSnappyRatio = 22
	// lz4MaxBlock is the largest lz4 frame block (block size id 7).
	lz4MaxBlock = 4 << 20
)

// StreamMemory bounds the memory, in bytes, that streaming the decompression
// of src (a records section compressed with c) holds at once, read from the
// stream's headers alone (xerial chunk lengths, lz4 frame descriptors, the
// zstd frame header); nothing is decompressed. Malformed headers give a
// bound the decoder then enforces or fails on: StreamMemory never errors.
func StreamMemory(c Codec, src []byte) int64 {
	switch c {
	case CodecGzip:
		return gzipStreamMemory
	case CodecSnappy:
		return snappyStreamMemory(src)
	case CodecLZ4:
		return 2*lz4StreamBlock(src) + 64<<10
	case CodecZstd:
		return int64(zstdStreamWindow(src)) + zstdBlockMemory
	}
	return 0
}

// snappyStreamMemory is the largest decoded chunk (a raw block: the block),
// each capped at what its encoded length can decode to.
func snappyStreamMemory(src []byte) int64 {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlockMemory(src)
	}
	var m int64
	for p := xerialHeaderLen; p+4 <= len(src); {
		n := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n > len(src)-p {
			break
		}
		m = max(m, snappyBlockMemory(src[p:p+n]))
		p += n
	}
	return m
}

func snappyBlockMemory(block []byte) int64 {
	n, err := snappy.DecodedLen(block)
	if err != nil || n < 0 {
		return 0
	}
	return min(int64(n), int64(len(block))*maxSnappyRatio+64)
}

// lz4StreamBlock is the largest block size any frame of src declares,
// walking frames by their block headers; lz4MaxBlock where the walk cannot
// tell.
func lz4StreamBlock(src []byte) int64 {
	var m int64
	for p := 0; p < len(src); {
		f := src[p:]
		n, err := lz4HeaderLen(f)
		if err != nil {
			return lz4MaxBlock
		}
		flg, bd := f[4], f[5]
		id := (bd >> 4) & 7
		if id < 4 {
			return lz4MaxBlock
		}
		m = max(m, int64(64<<10)<<(2*(id-4)))
		q := n
		for {
			if len(f)-q < 4 {
				return max(m, 64<<10)
			}
			size := binary.LittleEndian.Uint32(f[q:])
			q += 4
			if size == 0 {
				break
			}
			q += int(size &^ (1 << 31))
			if flg&0x10 != 0 { // block checksum
				q += 4
			}
			if q > len(f) {
				return max(m, 64<<10)
			}
		}
		if flg&0x04 != 0 { // content checksum
			q += 4
		}
		p += q
	}
	return max(m, 64<<10)
}

// zstdStreamWindow is the window the first frame of src declares (after
// skippable frames), capped to MaxStreamWindow; a single-segment frame's
// window is its content size. 1 MiB when it cannot be read.
func zstdStreamWindow(src []byte) int {
	const fallback = 1 << 20
	for len(src) >= 8 && binary.LittleEndian.Uint32(src)&0xFFFFFFF0 == 0x184D2A50 { // skippable
		n := int64(binary.LittleEndian.Uint32(src[4:]))
		if n > int64(len(src)-8) {
			return fallback
		}
		src = src[8+n:]
	}
	if len(src) < 6 || binary.LittleEndian.Uint32(src) != 0xFD2FB528 {
		return fallback
	}
	fhd := src[4]
	if fhd&0x20 == 0 { // a window descriptor follows
		wd := src[5]
		base := uint64(1) << (10 + wd>>3)
		w := base + base/8*uint64(wd&7)
		return int(min(max(w, zstd.MinWindowSize), MaxStreamWindow))
	}
	p := 5 + [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
	var fcs uint64
	switch fhd >> 6 {
	case 0:
		if len(src) < p+1 {
			return fallback
		}
		fcs = uint64(src[p])
	case 1:
		if len(src) < p+2 {
			return fallback
		}
		fcs = uint64(binary.LittleEndian.Uint16(src[p:])) + 256
	case 2:
		if len(src) < p+4 {
			return fallback
		}
		fcs = uint64(binary.LittleEndian.Uint32(src[p:]))
	case 3:
		if len(src) < p+8 {
			return fallback
		}
		fcs = binary.LittleEndian.Uint64(src[p:])
	}
	return int(min(max(fcs, zstd.MinWindowSize), MaxStreamWindow))
}

// streamDecoder reads the decompressed bytes of one records section,
// through pooled codec readers. Open, Read to io.EOF, Close.
type streamDecoder struct {
	src bytes.Reader
	in  onlyReader // hides src's extra methods from the codec readers
	r   io.Reader
	gz  *gzipReader
	lz  *lz4Reader
	zd  *zstdStream
	sn  snappyStream
}

// onlyReader is an io.Reader and nothing else: zstd would decode a
// bytes.Buffer-like source in one piece instead of streaming it.
type onlyReader struct{ r io.Reader }

func (o *onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type zstdStream struct {
	d   *zstd.Decoder
	win int
}

// zstdStreams pools decoders whose window is at most zstdPoolWindow;
// zstdWideStreams keeps the others, so one wide window's memory serves the
// next wide stream instead of each allocating its own (wide streams take
// turns in a caller's memory budget), and the garbage collector frees it
// once they stop coming.
var (
	zstdStreams     sync.Pool
	zstdWideStreams weakStack[zstdStream]
)

// snappyKeep is the largest snappy chunk buffer a decoder keeps; larger
// ones (raw blocks) go to snappyWideBufs.
const snappyKeep = 256 << 10

var snappyWideBufs weakStack[[]byte]

// weakStack keeps a few large values for reuse without keeping them alive:
// it holds weak pointers, so the garbage collector frees what a burst of
// large streams needed once they stop, while a steady flow of them reuses
// the same memory whichever thread it runs on (a sync.Pool is per P, and a
// miss there allocates another window).
type weakStack[T any] struct {
	mu sync.Mutex
	s  []weak.Pointer[T]
}

// get returns a kept value, or nil.
func (w *weakStack[T]) get() *T {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.s) > 0 {
		p := w.s[len(w.s)-1].Value()
		w.s = w.s[:len(w.s)-1]
		if p != nil {
			return p
		}
	}
	return nil
}

// put keeps v (at most 8 values; more are left to the collector).
func (w *weakStack[T]) put(v *T) {
	w.mu.Lock()
	if len(w.s) < 8 {
		w.s = append(w.s, weak.Make(v))
	}
	w.mu.Unlock()
}

// open starts reading src, compressed with c. Errors are the codec's (bad
// headers); the caller wraps them.
func (d *streamDecoder) open(c Codec, src []byte) error {
	d.src.Reset(src)
	d.in = onlyReader{&d.src}
	if len(src) == 0 && c != CodecNone {
		return fmt.Errorf("%s: empty stream", c)
	}
	switch c {
	case CodecNone:
		d.r = &d.src
	case CodecGzip:
		gr, _ := gzipReaders.Get().(*gzipReader)
		if gr == nil {
			gr = new(gzipReader)
		}
		d.gz = gr
		gr.br.Reset(src) // a bytes.Reader: gzip reads it without a bufio.Reader
		if err := gr.zr.Reset(&gr.br); err != nil {
			return err
		}
		d.r = &gr.zr
	case CodecSnappy:
		if err := d.sn.reset(src); err != nil {
			return err
		}
		d.r = &d.sn
	case CodecLZ4:
		if _, err := lz4HeaderLen(src); err != nil {
			return err
		}
		r, _ := lz4Readers.Get().(*lz4Reader)
		if r == nil {
			r = new(lz4Reader)
		}
		d.lz = r
		// A fresh lz4.Reader per stream (see decompressLZ4).
		r.zr = lz4.NewReader(&d.in)
		if err := r.zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
			return err
		}
		d.r = r.zr
	case CodecZstd:
		w := zstdStreamWindow(src)
		var zs *zstdStream
		if w > zstdPoolWindow {
			zs = zstdWideStreams.get()
		} else {
			zs, _ = zstdStreams.Get().(*zstdStream)
		}
		if zs == nil {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(uint64(w)))
			if err != nil {
				return err
			}
			zs = &zstdStream{d: dec}
		}
		zs.win = max(zs.win, w)
		d.zd = zs
		// Frames after the first may not declare a larger window than the
		// one accounted for (StreamMemory).
		if err := zs.d.ResetWithOptions(&d.in, zstd.WithDecoderMaxWindow(uint64(w))); err != nil {
			return err
		}
		d.r = zs.d
	default:
		return fmt.Errorf("%w: %d", ErrUnknownCodec, c)
	}
	return nil
}

func (d *streamDecoder) Read(p []byte) (int, error) { return d.r.Read(p) }

// close returns the codec readers to their pools.
func (d *streamDecoder) close() {
	if d.gz != nil {
		d.gz.br.Reset(nil)
		gzipReaders.Put(d.gz)
		d.gz = nil
	}
	if d.lz != nil {
		d.lz.zr.Reset(nil)
		d.lz.zr = nil
		lz4Readers.Put(d.lz)
		d.lz = nil
	}
	if d.zd != nil {
		_ = d.zd.d.Reset(nil)
		if d.zd.win <= zstdPoolWindow {
			zstdStreams.Put(d.zd)
		} else {
			zstdWideStreams.put(d.zd)
		}
		d.zd = nil
	}
	d.sn.reset(nil)
	if cap(d.sn.buf) > snappyKeep {
		// A large raw block's buffer goes back to a shared pool, not with
		// this decoder: reused while such blocks keep coming, freed by the
		// garbage collector when they stop.
		b := d.sn.buf[:0]
		snappyWideBufs.put(&b)
		d.sn.buf = nil
	}
	d.src.Reset(nil)
	d.in = onlyReader{}
	d.r = nil
}

// snappyStream decodes xerial chunks one at a time (a raw block at once).
type snappyStream struct {
	src  []byte
	p    int
	raw  bool
	buf  []byte
	out  []byte
	done bool
}

var errSnappyTooLarge = errors.New("snappy block decodes to more than its size allows")

func (s *snappyStream) reset(src []byte) error {
	*s = snappyStream{src: src, buf: s.buf[:0]}
	if len(src) == 0 {
		return nil
	}
	if !bytes.HasPrefix(src, xerialMagic) {
		s.raw = true
		return nil
	}
	if len(src) < xerialHeaderLen {
		return fmt.Errorf("%w: %d-byte header", errSnappyFraming, len(src))
	}
	s.p = xerialHeaderLen
	return nil
}

func (s *snappyStream) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.done {
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// next decodes the next chunk into buf.
func (s *snappyStream) next() error {
	var block []byte
	if s.raw {
		block, s.done = s.src, true
	} else {
		if s.p >= len(s.src) {
			s.done = true
			return nil
		}
		if len(s.src)-s.p < 4 {
			return fmt.Errorf("%w: %d trailing bytes", errSnappyFraming, len(s.src)-s.p)
		}
		n := int64(binary.BigEndian.Uint32(s.src[s.p:]))
		s.p += 4
		if n > int64(len(s.src)-s.p) {
			return fmt.Errorf("%w: chunk of %d bytes with %d left", errSnappyFraming, n, len(s.src)-s.p)
		}
		block = s.src[s.p : s.p+int(n)]
		s.p += int(n)
	}
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return err
	}
	if int64(n) > int64(len(block))*maxSnappyRatio+64 {
		return errSnappyTooLarge
	}
	if n > cap(s.buf) && n > snappyKeep {
		if bp := snappyWideBufs.get(); bp != nil && cap(*bp) >= n {
			s.buf = *bp
		}
	}
	s.buf = grow(s.buf[:0], n)[:n]
	if _, err := snappy.Decode(s.buf, block); err != nil {
		return err
	}
	s.out = s.buf
	return nil
}
