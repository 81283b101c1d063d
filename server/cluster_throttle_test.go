package server

import (
	"errors"
	"fmt"
	"testing"
)

// TestThrottledPartitions: Kafka's parsing of the throttled-replica lists
// for one broker, and the check of the dynamic rates.
func TestThrottledPartitions(t *testing.T) {
	for _, tc := range []struct {
		v    string
		all  bool
		want string
	}{
		{"", false, "[]"},
		{"*", true, "[]"},
		{"0:1,0:2,1:2,2:3", false, "[0 1]"},
		{" 4 : 2 , 4:2", false, "[4]"},
		{"x:2,3", false, "[]"},
	} {
		all, parts := throttledPartitions(tc.v, 2)
		if all != tc.all || fmt.Sprint(parts) != tc.want {
			t.Errorf("%q: all %v %v, want %v %s", tc.v, all, parts, tc.all, tc.want)
		}
	}
	for _, bad := range [][2]string{{leaderThrottledRate, "-1"}, {followerThrottledRate, "fast"}, {"num.io.threads", "8"}} {
		if err := checkDynamicBrokerConfig(bad[0], bad[1]); !errors.Is(err, ErrConfig) {
			t.Errorf("%s=%s: %v", bad[0], bad[1], err)
		}
	}
	if err := checkDynamicBrokerConfig(leaderThrottledRate, "1000000"); err != nil {
		t.Error(err)
	}
}
