package record

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipWriters pools writers per level 1..9 (index 0 is the default level).
var gzipWriters [10]sync.Pool

func compressGzip(dst, src []byte, level int) ([]byte, error) {
	if level < 0 || level > 9 {
		level = 0
	}
	aw := &appendWriter{b: dst}
	zw, _ := gzipWriters[level].Get().(*gzip.Writer)
	if zw == nil {
		l := level
		if l == 0 {
			l = flate.DefaultCompression
		}
		var err error
		if zw, err = gzip.NewWriterLevel(aw, l); err != nil {
			return dst, err
		}
	} else {
		zw.Reset(aw)
	}
	_, err := zw.Write(src)
	if err == nil {
		err = zw.Close()
	}
	zw.Reset(io.Discard)
	gzipWriters[level].Put(zw)
	if err != nil {
		return dst, err
	}
	return aw.b, nil
}

type gzipReader struct {
	zr gzip.Reader
	br bytes.Reader
}

var gzipReaders sync.Pool

func decompressGzip(dst, src []byte) ([]byte, error) {
	gr, _ := gzipReaders.Get().(*gzipReader)
	if gr == nil {
		gr = new(gzipReader)
	}
	defer func() {
		gr.br.Reset(nil)
		gzipReaders.Put(gr)
	}()
	gr.br.Reset(src)
	if err := gr.zr.Reset(&gr.br); err != nil {
		return dst, err
	}
	return readLimited(dst, &gr.zr)
}
