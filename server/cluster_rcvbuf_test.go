package server

import "testing"

// TestReplicaSocketReceiveBuffer: replica.socket.receive.buffer.bytes is
// a broker property (default -1, the OS's autotuning, where Kafka's is
// 65536), handed to the replica fetchers' sockets.
func TestReplicaSocketReceiveBuffer(t *testing.T) {
	for _, tc := range []struct {
		props []string
		want  int32
	}{
		{nil, -1},
		{[]string{"replica.socket.receive.buffer.bytes=65536"}, 65536},
		{[]string{"replica.socket.receive.buffer.bytes=1048576"}, 1 << 20},
	} {
		c, err := LoadConfig("", append([]string{"zookeeper.connect=127.0.0.1:2181"}, tc.props...), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.props, err)
		}
		if got := c.Cluster.ReplicaSocketReceiveBufferBytes; got != tc.want {
			t.Errorf("%q: %d, want %d", tc.props, got, tc.want)
		}
	}
}
