package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterControlCheckAndApplyAtomic: an UpdateMetadata of the current
// controller epoch passes its check, and before it is applied a newer
// controller's UpdateMetadata arrives. The newer one must be applied last
// (Kafka checks and applies under replicaStateChangeLock): before, it
// overtook the older one, which then overwrote the metadata cache with the
// deposed controller's view (here: no live broker).
func TestClusterControlCheckAndApplyAtomic(t *testing.T) {
	_, connect := testZK(t)
	s, err := tryClusterBrokerWith(connect, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cl := s.cl
	waitFor(t, 60*time.Second, "the controller's first UpdateMetadata", func() bool {
		im := cl.images.load()
		return cl.ctrlEpoch.Load() >= 1 && len(im.brokers) == 1
	})
	epoch := cl.ctrlEpoch.Load()
	stale := kmsg.NewPtrUpdateMetadataRequest()
	stale.Version, stale.ControllerID, stale.ControllerEpoch, stale.BrokerEpoch = 7, 1, epoch, -1
	newer := kmsg.NewPtrUpdateMetadataRequest()
	newer.Version, newer.ControllerID, newer.ControllerEpoch, newer.BrokerEpoch = 7, 1, epoch+1, -1
	newer.LiveBrokers = stale.LiveBrokers
	for _, b := range cl.images.load().brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = b.id
		newer.LiveBrokers = append(newer.LiveBrokers, lb)
	}

	passed, release := make(chan struct{}), make(chan struct{})
	hook := func(req kmsg.Request) {
		if r, ok := req.(*kmsg.UpdateMetadataRequest); ok && r == stale {
			close(passed)
			<-release
		}
	}
	cl.afterControlCheck.Store(&hook)
	staleDone, newerDone := make(chan kmsg.Response, 1), make(chan kmsg.Response, 1)
	go func() { staleDone <- s.handleUpdateMetadata(stale) }()
	<-passed
	go func() { newerDone <- s.handleUpdateMetadata(newer) }()
	// Without the lock the newer request completes while the stale one
	// waits between its check and its apply; with it, the newer one waits
	// for the stale one. Either way the stale one is let go after the
	// newer has finished or had 2 s to.
	select {
	case <-newerDone:
		newerDone <- nil
	case <-time.After(2 * time.Second):
	}
	close(release)
	if r := (<-staleDone).(*kmsg.UpdateMetadataResponse); r.ErrorCode != 0 {
		t.Fatalf("the request of the then current epoch %d: error %d", epoch, r.ErrorCode)
	}
	if r, _ := (<-newerDone).(*kmsg.UpdateMetadataResponse); r != nil && r.ErrorCode != 0 {
		t.Fatalf("the newer controller's request: error %d", r.ErrorCode)
	}
	im := cl.images.load()
	if im.controllerEpoch != epoch+1 || len(im.brokers) != len(newer.LiveBrokers) {
		t.Fatalf("metadata cache at controller epoch %d with %d brokers, want the newer controller's (epoch %d, %d brokers): an older request was applied after a newer one",
			im.controllerEpoch, len(im.brokers), epoch+1, len(newer.LiveBrokers))
	}
}
