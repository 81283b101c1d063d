package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// recompressInMemory is the decompressed size up to which recompression
// decompresses into one buffer and compresses it in one piece; a larger
// batch is streamed through the new codec's writer, so its memory stays
// this buffer plus the writer's, whatever the batch expands to.
const recompressInMemory = 1 << 20

// ErrRecompressedTooLarge is returned by AppendRecompressedLimit when the
// recompressed batch would exceed the limit.
var ErrRecompressedTooLarge = errors.New("record: recompressed batch exceeds the limit")

// AppendRecompressed appends b (one whole v2 batch) to dst with its records
// recompressed with codec c at level (0: the codec's default), as Kafka's
// LogValidator does when a topic's compression.type differs from the
// producer's codec: the record bytes are identical once decompressed, the
// header keeps every field (base offset, timestamps, producer fields, last
// offset delta, count) but the codec bits and the length, and the CRC is
// recomputed. On error dst is returned unchanged (same length).
func (b Batch) AppendRecompressed(dst []byte, c Codec, level int) ([]byte, error) {
	return b.AppendRecompressedLimit(dst, c, level, 0)
}

// AppendRecompressedLimit is AppendRecompressed that gives up, with
// ErrRecompressedTooLarge, once the new batch would be longer than maxLen
// bytes (0: no limit). Records that decompress to more than 1 MiB are
// streamed from the old codec's reader to the new codec's writer, so the
// memory does not grow with what the batch expands to (at most
// MaxDecompressedSize, else ErrCompression).
func (b Batch) AppendRecompressedLimit(dst []byte, c Codec, level, maxLen int) ([]byte, error) {
	if err := checkHeader(b, -1); err != nil {
		return dst, err
	}
	if c < CodecNone || c > CodecZstd {
		return dst, fmt.Errorf("%w: %w: %d", ErrBadOptions, ErrUnknownCodec, c)
	}
	start := len(dst)
	dst = append(dst, b[:BatchHeaderSize]...)
	src := b.RecordsBytes()
	limit := 0
	if maxLen > 0 {
		if maxLen < BatchHeaderSize {
			return dst[:start], ErrRecompressedTooLarge
		}
		limit = start + maxLen
	}
	var err error
	switch oc := b.Codec(); {
	case oc != CodecNone && len(src) > 0:
		dst, err = recompressStream(oc, src, c, level, dst, limit)
	case len(src) > 0 || b.NumRecords() > 0:
		dst, err = compressLevel(c, level, dst, src)
	}
	if err != nil {
		return dst[:start], err
	}
	if limit > 0 && len(dst) > limit {
		return dst[:start], ErrRecompressedTooLarge
	}
	out := Batch(dst[start:])
	if int64(len(out))-LogOverhead > 1<<31-1 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes is too large", ErrBadOptions, len(out))
	}
	binary.BigEndian.PutUint32(out[posLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[posAttributes:], uint16(b.Attributes()&^AttrCodecMask|int16(c)))
	out.UpdateCRC()
	return dst, nil
}

// countingReader reads a streamDecoder, failing past MaxDecompressedSize
// and remembering the decoder's error (to tell it from the writer's).
type countingReader struct {
	d   *streamDecoder
	n   int64
	err error
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.d.Read(p)
	r.n += int64(n)
	if r.n > int64(MaxDecompressedSize) {
		err = errTooLarge
	}
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// recompressStream decompresses src (codec oc) and appends it compressed
// with c to dst: in one piece when it fits recompressInMemory, else through
// c's streaming writer. limit > 0 caps len(dst).
func recompressStream(oc Codec, src []byte, c Codec, level int, dst []byte, limit int) ([]byte, error) {
	var d streamDecoder
	defer d.close()
	if err := d.open(oc, src); err != nil {
		return dst, Corrupt(ErrCompression, -1, -1, "%v", fmt.Errorf("%w: %s: %w", ErrCompression, oc, err))
	}
	cr := &countingReader{d: &d}
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	buf := grow((*sp)[:0], recompressInMemory+1)[:recompressInMemory+1]
	*sp = buf[:0]
	n, err := io.ReadFull(cr, buf)
	if cr.err != nil {
		return dst, Corrupt(ErrCompression, -1, -1, "%v", fmt.Errorf("%w: %s: %w", ErrCompression, oc, cr.err))
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF { // all of it fits
		return compressLevel(c, level, dst, buf[:n])
	}
	out, err := compressStreaming(c, level, dst, io.MultiReader(&byteSlice{buf[:n]}, cr), limit)
	if cr.err != nil {
		return dst, Corrupt(ErrCompression, -1, -1, "%v", fmt.Errorf("%w: %s: %w", ErrCompression, oc, cr.err))
	}
	return out, err
}

// byteSlice reads a slice once (bytes.Reader without its WriterTo, so the
// copy below goes through the writer's Write).
type byteSlice struct{ b []byte }

func (s *byteSlice) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// limitWriter appends to a slice, failing once it would pass limit (> 0).
type limitWriter struct {
	b     []byte
	limit int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.limit > 0 && len(w.b)+len(p) > w.limit {
		return 0, ErrRecompressedTooLarge
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// RecompressMemory bounds the memory AppendRecompressedLimit holds to
// recompress src (a records section in codec from) to codec to at level:
// the stream's decoder (StreamMemory), the in-memory buffer and the new
// codec's encoder.
func RecompressMemory(from Codec, src []byte, to Codec, level int) int64 {
	m := StreamMemory(from, src) + recompressInMemory
	switch to {
	case CodecGzip:
		m += 2 << 20
	case CodecLZ4:
		m += 1 << 20
	case CodecSnappy:
		m += 128 << 10
	case CodecZstd:
		switch l := zstd.EncoderLevelFromZstd(level); {
		case level == 0 || l <= zstd.SpeedDefault:
			m += 4 << 20
		case l == zstd.SpeedBetterCompression:
			m += 8 << 20
		default:
			m += 40 << 20
		}
	}
	return m
}

// zstdStreamEncoderWindow is the window of recompression's streaming zstd
// encoders.
const zstdStreamEncoderWindow = 1 << 20

// zstdStreamEncoders pools streaming encoders per klauspost level.
var zstdStreamEncoders sync.Map // zstd.EncoderLevel -> *sync.Pool

// compressStreaming appends r compressed with c at level to dst, as
// compressLevel would compress it in one piece (the same stream format),
// reading it 32 KiB at a time.
func compressStreaming(c Codec, level int, dst []byte, r io.Reader, limit int) ([]byte, error) {
	w := &limitWriter{b: dst, limit: limit}
	copyBuf := make([]byte, xerialBlockSize)
	var err error
	switch c {
	case CodecNone:
		_, err = io.CopyBuffer(w, r, copyBuf)
	case CodecGzip:
		if level < 0 || level > 9 {
			level = 0
		}
		err = streamThrough(w, r, copyBuf, func(sink io.Writer) (io.WriteCloser, func(), error) {
			gw, err := getGzipWriter(level)
			if err != nil {
				return nil, nil, err
			}
			gw.zw.Reset(sink)
			return gw.zw, func() { gw.zw.Reset(&gw.aw); gzipWriters[level].Put(gw) }, nil
		})
	case CodecLZ4:
		if level < 0 || level >= len(lz4Levels) {
			level = 0
		}
		err = streamThrough(w, r, copyBuf, func(sink io.Writer) (io.WriteCloser, func(), error) {
			lw, err := getLZ4Writer(level)
			if err != nil {
				return nil, nil, err
			}
			lw.zw.Reset(sink)
			return lw.zw, func() { lw.zw.Reset(&lw.aw); lz4Writers[level].Put(lw) }, nil
		})
	case CodecZstd:
		err = streamThrough(w, r, copyBuf, func(sink io.Writer) (io.WriteCloser, func(), error) {
			l := zstd.SpeedDefault
			if level != 0 {
				l = zstd.EncoderLevelFromZstd(level)
			}
			pv, _ := zstdStreamEncoders.LoadOrStore(l, new(sync.Pool))
			pool := pv.(*sync.Pool)
			e, _ := pool.Get().(*zstd.Encoder)
			if e == nil {
				var err error
				// A 1 MiB window and the lower-memory tables: 2.7 MB per
				// encoder at the default level instead of 18.5 MB.
				if e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true),
					zstd.WithWindowSize(zstdStreamEncoderWindow), zstd.WithLowerEncoderMem(true)); err != nil {
					return nil, nil, err
				}
			}
			e.Reset(sink)
			return e, func() { e.Reset(nil); pool.Put(e) }, nil
		})
	case CodecSnappy:
		err = snappyStreaming(w, r)
	default:
		err = fmt.Errorf("%w: %d", ErrUnknownCodec, c)
	}
	if err != nil {
		return dst, err
	}
	return w.b, nil
}

// streamThrough copies r through the writer open makes over w, closing it.
func streamThrough(w io.Writer, r io.Reader, buf []byte, open func(io.Writer) (io.WriteCloser, func(), error)) error {
	zw, release, err := open(w)
	if err != nil {
		return err
	}
	defer release()
	if _, err := io.CopyBuffer(zw, struct{ io.Reader }{r}, buf); err != nil {
		return err
	}
	return zw.Close()
}

// snappyStreaming writes compressSnappy's format (xerial framing, 32 KiB
// chunks) from r.
func snappyStreaming(w *limitWriter, r io.Reader) error {
	in := make([]byte, xerialBlockSize)
	var chunk []byte
	var hdr [4]byte
	first := true
	for {
		n, err := io.ReadFull(r, in)
		if n > 0 || first {
			if first {
				if _, werr := w.Write(append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)); werr != nil {
					return werr
				}
				first = false
			}
			if n > 0 {
				chunk = s2.EncodeSnappy(chunk[:cap(chunk)], in[:n])
				binary.BigEndian.PutUint32(hdr[:], uint32(len(chunk)))
				if _, werr := w.Write(hdr[:]); werr != nil {
					return werr
				}
				if _, werr := w.Write(chunk); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
