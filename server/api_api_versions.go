package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleApiVersions answers ApiVersions v0-3 with the advertised table.
func (s *Server) handleApiVersions(req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.Default()
	for _, r := range s.apiTable() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.key, r.min, r.max
		if r.key == int16(kmsg.Produce) {
			// As Kafka 4 does (KAFKA-18659): advertise Produce from v0 though v0-2
			// are refused. librdkafka before 2.11.1 (Debian's kcat) sends gzip,
			// snappy and lz4 batches uncompressed unless the Produce range reaches v0.
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// apiVersionsUnsupported is Kafka's answer to an ApiVersions version it does
// not know (KIP-511): a v0 body with UNSUPPORTED_VERSION and the ApiVersions
// range, so the client retries with a version both sides speak.
func apiVersionsUnsupported() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = 35 // UNSUPPORTED_VERSION
	rng, _ := versionRange(int16(kmsg.ApiVersions))
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = rng.key, rng.min, rng.max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
