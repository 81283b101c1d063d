package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeCluster answers DescribeCluster v0 (cluster mode; key 60)
// from the metadata cache: the cluster id, the controller and every live
// broker with its endpoint on the listener the request came in on.
func (s *Server) handleDescribeCluster(c *conn, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.Default()
	im := s.cl.images.load()
	resp.ClusterID, resp.ControllerID = s.cl.clusterID, im.controllerID
	resp.ClusterAuthorizedOperations = math.MinInt32
	if v := im.view(c.listener); v != nil {
		for _, b := range v.brokers {
			db := kmsg.NewDescribeClusterResponseBroker()
			db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
			resp.Brokers = append(resp.Brokers, db)
		}
	}
	return resp
}
