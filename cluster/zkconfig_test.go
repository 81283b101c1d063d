package cluster_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stratalog/strata/cluster"
)

var errorsIs = errors.Is

func TestParseZKConnect(t *testing.T) {
	good := []struct {
		in      string
		servers []string
		chroot  string
	}{
		{"localhost:2181", []string{"localhost:2181"}, ""},
		{"h1:2181,h2:2182/kafka", []string{"h1:2181", "h2:2182"}, "/kafka"},
		{"h1,h2:3000/a/b", []string{"h1:2181", "h2:3000"}, "/a/b"},
		{" h1:1 , h2:2 /", []string{"h1:1", "h2:2"}, ""},
		{"[::1]:2181/x", []string{"[::1]:2181"}, "/x"},
		{"[::1]", []string{"[::1]:2181"}, ""},
	}
	for _, c := range good {
		s, r, err := cluster.ParseZKConnect(c.in)
		if err != nil || !reflect.DeepEqual(s, c.servers) || r != c.chroot {
			t.Errorf("ParseZKConnect(%q) = %v %q %v", c.in, s, r, err)
		}
	}
	for _, bad := range []string{"", "/kafka", "h1:2181,", "h:0", "h:70000", "h:x", ":2181", "h:1/a/", "h:1/a//b", "h:1/a/../b", "::1:2181"} {
		if _, _, err := cluster.ParseZKConnect(bad); !errors.Is(err, cluster.ErrBadConnect) {
			t.Errorf("ParseZKConnect(%q): %v, want ErrBadConnect", bad, err)
		}
	}
}
