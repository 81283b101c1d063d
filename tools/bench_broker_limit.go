package tools

import (
	"errors"
	"io"
	"net"
	"time"
)

// loopbackLimitStreams is how many streams loopbackLimit takes the median
// of: one stream's rate swings from second to second on a shared 2-core
// machine (twelve 1.1 GB streams in a row: 3,044 to 5,155 MB/s), and a
// ratio to a single one moved by as much whatever the broker did.
const loopbackLimitStreams = 5

// loopbackLimit streams total bytes over one TCP connection on 127.0.0.1
// in 1 MiB writes and reads, loopbackLimitStreams times one after another,
// and returns the median MB/s: the most any broker could move through one
// client connection on this machine.
func loopbackLimit(total int64) (float64, error) {
	rates := make([]float64, loopbackLimitStreams)
	for i := range rates {
		r, err := loopbackStream(total)
		if err != nil {
			return 0, err
		}
		rates[i] = r
	}
	return median(rates), nil
}

// loopbackStream is one stream of loopbackLimit: MB/s.
func loopbackStream(total int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	read := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			read <- err
			return
		}
		defer c.Close()
		n, err := io.CopyBuffer(io.Discard, io.LimitReader(c, total), make([]byte, 1<<20))
		if err == nil && n < total {
			err = io.ErrUnexpectedEOF
		}
		read <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	for sent := int64(0); sent < total; {
		n, err := c.Write(buf[:min(int64(len(buf)), total-sent)])
		sent += int64(n)
		if err != nil {
			return 0, err
		}
	}
	if err := <-read; err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return mbps(total, time.Since(t0).Seconds()), nil
}
