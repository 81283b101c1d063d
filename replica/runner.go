package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// Kafka 2.8's defaults for the Runner's settings, but one.
const (
	DefaultReplicaSocketTimeoutMs = 30000
	// DefaultReplicaSocketReceiveBufferBytes is -1, the OS's autotuned
	// buffer, where Kafka's default is 64 KiB: a follower catching up
	// over a 64 KiB window spends its core reading, because each read
	// that reopens the window makes the kernel send the leader's next
	// segments in the reader's context; the autotuned window lets the
	// leader's core send them (README, issue 18's floors). 65536 gives
	// Kafka's behaviour.
	DefaultReplicaSocketReceiveBufferBytes = -1
	// KafkaReplicaSocketReceiveBufferBytes is Kafka's default for
	// replica.socket.receive.buffer.bytes.
	KafkaReplicaSocketReceiveBufferBytes            = 64 << 10
	DefaultReplicaHighWatermarkCheckpointIntervalMs = 5000
	// maxAlterBackoffMs caps the AlterPartition sender's backoff while the
	// controller it knows keeps failing (see runAlter).
	maxAlterBackoffMs = 1000
)

// RunnerOptions configure a Runner. Zero values take Kafka's defaults.
type RunnerOptions struct {
	// Controller returns the current controller's broker id and address
	// (host:port), ok false while none is known (the broker learns it from
	// ZooKeeper's /controller or UpdateMetadata). Call
	// Runner.ControllerChanged when it changes. Required.
	Controller func() (id int32, addr string, ok bool)
	// Resolve maps a leader's broker id to its address (host:port). Default:
	// the Manager's Endpoint, from LeaderAndIsr's live_leaders.
	Resolve func(broker int32) (addr string, ok bool)
	// ClientID is the client id of the inter-broker requests (default:
	// Kafka's "broker-<id>-fetcher-<n>" for fetchers, "broker-<id>" for the
	// others).
	ClientID string
	// SocketTimeoutMs is replica.socket.timeout.ms: the longest a request
	// (a long-polling Fetch included) may take before the connection is
	// given up. It must be at least replica.fetch.wait.max.ms.
	SocketTimeoutMs int64
	// SocketReceiveBufferBytes is replica.socket.receive.buffer.bytes, the
	// fetchers' SO_RCVBUF (-1: the OS default, which Linux tunes).
	SocketReceiveBufferBytes int
	// HighWatermarkCheckpointIntervalMs is
	// replica.high.watermark.checkpoint.interval.ms.
	HighWatermarkCheckpointIntervalMs int64
	// Now is the clock in milliseconds (default: the wall clock).
	Now func() int64
	// Logger (default: the Manager's).
	Logger *slog.Logger
	// Dial, when set, opens every connection (tests put a proxy there);
	// SocketReceiveBufferBytes is then the dialler's business.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Security secures every connection as the inter-broker listener's
	// security protocol asks (zero: PLAINTEXT).
	Security kwire.Security
}

// Runner is the production edge of a Manager (see the package doc): the
// goroutines that send what Manager.Ready asks over the Kafka protocol and
// hand every outcome back, and the high-watermark checkpoint ticker.
type Runner struct {
	m    *Manager
	o    RunnerOptions
	log  *slog.Logger
	ctx  context.Context // cancelled by Close: interrupts every request
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	fetchers map[FetchTarget]*fetcher

	early atomic.Int64 // fetches sent while the answer before arrived

	alterCh   chan *kmsg.AlterPartitionRequest // one in flight (Manager's rule)
	ctrlCh    chan struct{}                    // ControllerChanged
	closeOnce sync.Once
	closeErr  error
}

// StartRunner checks o, fills its defaults and starts the Runner's
// goroutines over m: the loop that sends what m.Ready asks, and the
// high-watermark checkpoint ticker. Stop it with Close before closing m.
func StartRunner(m *Manager, o RunnerOptions) (*Runner, error) {
	if m == nil || o.Controller == nil {
		return nil, fmt.Errorf("%w: a Runner needs a Manager and a controller resolver", ErrInvalidRequest)
	}
	cfg := m.Config()
	if o.SocketTimeoutMs == 0 {
		o.SocketTimeoutMs = DefaultReplicaSocketTimeoutMs
	}
	if o.SocketReceiveBufferBytes == 0 { // a Runner cannot ask for no buffer
		o.SocketReceiveBufferBytes = DefaultReplicaSocketReceiveBufferBytes
	}
	if o.HighWatermarkCheckpointIntervalMs == 0 {
		o.HighWatermarkCheckpointIntervalMs = DefaultReplicaHighWatermarkCheckpointIntervalMs
	}
	switch {
	case o.SocketTimeoutMs < int64(cfg.ReplicaFetchWaitMaxMs):
		// Kafka refuses this too: every long poll would time out.
		return nil, fmt.Errorf("%w: replica.socket.timeout.ms %d is below replica.fetch.wait.max.ms %d", ErrInvalidRequest, o.SocketTimeoutMs, cfg.ReplicaFetchWaitMaxMs)
	case o.SocketTimeoutMs < 0 || o.HighWatermarkCheckpointIntervalMs < 0:
		return nil, fmt.Errorf("%w: replica.socket.timeout.ms and replica.high.watermark.checkpoint.interval.ms must be positive", ErrInvalidRequest)
	}
	if o.Resolve == nil {
		o.Resolve = func(id int32) (string, bool) {
			e, ok := m.Endpoint(id)
			if !ok {
				return "", false
			}
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
		}
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if o.Logger == nil {
		o.Logger = cfg.Logger
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{
		m:        m,
		o:        o,
		log:      o.Logger.With("component", "replica-runner"),
		ctx:      ctx,
		stop:     cancel,
		fetchers: map[FetchTarget]*fetcher{},
		alterCh:  make(chan *kmsg.AlterPartitionRequest, 1),
		ctrlCh:   make(chan struct{}, 1),
	}
	r.wg.Add(3)
	go r.loop()
	go r.runAlter()
	go r.checkpointLoop()
	return r, nil
}

// ControllerChanged tells the Runner that the controller's id or address may
// have changed: an AlterPartition waiting for a controller goes now.
func (r *Runner) ControllerChanged() {
	select {
	case r.ctrlCh <- struct{}{}:
	default:
	}
}

// Close stops the Runner: requests in flight are cancelled (their outcomes
// handed back to the Manager as errors), the goroutines end, and the high
// watermarks are checkpointed one last time; the checkpoint's error is
// returned. The Manager stays open (the caller closes it after).
func (r *Runner) Close() error {
	r.closeOnce.Do(func() {
		r.stop()
		r.wg.Wait()
		r.sweep()
		if err := r.m.CheckpointHighWatermarks(); err != nil {
			r.closeErr = err
			r.log.Error("writing the high-watermark checkpoint at shutdown", "err", err)
		}
	})
	return r.closeErr
}

// sweep hands back what the loop queued while its senders were stopping
// (the goroutines have ended): a request never sent is answered with
// ErrRunnerStopped, so the Manager can be driven again.
func (r *Runner) sweep() {
	now := r.o.Now()
	for _, f := range r.fetchers {
		select {
		case job := <-f.jobs:
			r.m.FetchResponse(job.Target, job.Req, nil, ErrRunnerStopped, now)
		default:
		}
	}
	select {
	case <-r.alterCh:
		r.m.AlterPartitionResponse(nil, ErrRunnerStopped, now)
	default:
	}
}

// loop sends what Ready asks, then sleeps until the Manager signals new work
// or Ready's NextMs comes: nothing runs on a timer of its own.
func (r *Runner) loop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if r.ctx.Err() != nil {
			return
		}
		now := r.o.Now()
		rd := r.m.Ready(now)
		r.dispatch(&rd)
		wake := r.m.Wake() // after Ready: a signal since then has closed it
		var due <-chan time.Time
		if rd.NextMs > 0 {
			d := time.Duration(rd.NextMs-r.o.Now()) * time.Millisecond
			timer.Reset(max(d, 0))
			due = timer.C
		}
		select {
		case <-r.ctx.Done():
			return
		case <-wake:
		case <-due:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// dispatch hands each request of rd to its sender.
func (r *Runner) dispatch(rd *Ready) {
	for _, f := range rd.Fetches {
		r.sendFetch(f)
	}
	for _, l := range rd.ListOffsets {
		r.wg.Add(1)
		go r.sendListOffsets(l)
	}
	if rd.AlterPartition != nil {
		select {
		case r.alterCh <- rd.AlterPartition:
		default:
			// Cannot happen: the Manager has one in flight at most, and
			// the sender takes it before handing back the previous one.
			r.log.Error("AlterPartition sender busy: request dropped")
			r.m.AlterPartitionResponse(nil, fmt.Errorf("%w: AlterPartition sender busy", ErrInvalidRequest), r.o.Now())
		}
	}
}

// clientID is the client id of a connection; kind names it when none is set.
func (r *Runner) clientID(kind string) string {
	if r.o.ClientID != "" {
		return r.o.ClientID
	}
	return fmt.Sprintf("broker-%d%s", r.m.Config().BrokerID, kind)
}

// dial opens a connection to addr within ctx.
func (r *Runner) dial(ctx context.Context, addr, clientID string, fetcher bool) (*kwire.Conn, error) {
	o := kwire.Options{ClientID: clientID, Dial: r.o.Dial, Security: r.o.Security}
	if fetcher {
		// The largest response stays the connection's read buffer: no
		// buffer to allocate and fault in per fetch while catching up.
		cfg := r.m.Config()
		o.KeepBufferBytes = int(cfg.ReplicaFetchResponseMaxBytes) + int(cfg.ReplicaFetchMaxBytes) + 64<<10
	}
	if o.Dial == nil && fetcher && r.o.SocketReceiveBufferBytes > 0 {
		// Before connect, so the window scale fits the buffer.
		size := r.o.SocketReceiveBufferBytes
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
			}); err != nil {
				return err
			}
			return serr
		}}
		o.Dial = d.DialContext
	}
	return kwire.Dial(ctx, addr, o)
}

// requestCtx bounds one request by replica.socket.timeout.ms and Close.
func (r *Runner) requestCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, time.Duration(r.o.SocketTimeoutMs)*time.Millisecond)
}

// checkpointLoop writes replication-offset-checkpoint every
// replica.high.watermark.checkpoint.interval.ms (Kafka's
// checkpointHighWatermarks task); Close writes the last one.
func (r *Runner) checkpointLoop() {
	defer r.wg.Done()
	if r.o.HighWatermarkCheckpointIntervalMs == 0 {
		return
	}
	t := time.NewTicker(time.Duration(r.o.HighWatermarkCheckpointIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			if err := r.m.CheckpointHighWatermarks(); err != nil {
				r.log.Error("writing the high-watermark checkpoint", "err", err)
			}
		}
	}
}
