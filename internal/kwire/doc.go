// Package kwire is a minimal Kafka-protocol client connection for
// inter-broker traffic: the controller's LeaderAndIsr, UpdateMetadata and
// StopReplica to brokers, followers' Fetch and OffsetForLeaderEpoch to
// leaders, and brokers' AlterPartition and ControlledShutdown to the
// controller. franz-go's kmsg encodes and decodes the bodies; the framing
// is ours.
//
// # Framing
//
// A request is a 4-byte big-endian size, then the request header, then the
// body. Header v1 (non-flexible versions): api key int16, api version
// int16, correlation id int32, client id as a nullable int16-length string.
// Header v2 (flexible versions) adds an empty tagged-field section (one 0
// byte). ControlledShutdown v0 alone uses header v0: no client id.
//
// A response is a 4-byte size, the correlation id, for flexible versions a
// tagged-field section (skipped), then the body, decoded with the request's
// ResponseKind at the request's version. ApiVersions responses always use
// header v0, even at flexible versions, so a broker that does not know the
// version can answer.
//
// # Use
//
// A Conn carries one request at a time (Request), a batch written at
// once and answered in order (Pipeline), or requests sent before the
// answers to earlier ones are read (Send, Receive; ReceiveEarly sends the
// next request, if its hook gives one, while an answer is still
// arriving); the caller's goroutine does the I/O, the package starts
// none. Each response's correlation id must match
// its request's. The context's deadline bounds the whole exchange; a
// cancelled context interrupts it. Any error leaves the stream in an
// unknown state, so it closes the connection: later calls return ErrClosed
// with the first cause.
//
// Buffers are reused: one write buffer and one read buffer per connection,
// so a request costs no allocation beyond its response's decoding (a
// buffer grown past Options.KeepBufferBytes, 4 MiB by default, is dropped
// after its exchange). Byte
// fields of a response (a Fetch response's record batches) alias the read
// buffer and are valid until the next call on the same Conn; copy them to
// keep them longer.
//
// # Security
//
// Options.Security secures a connection as the inter-broker listener's
// security protocol asks: TLS (crypto/tls, the handshake within Dial's
// timeout), then SASL (SaslHandshake v1 and SaslAuthenticate v1 rounds
// driven by a franz-go sasl.Mechanism), before Dial returns; a refusal is
// ErrAuthentication naming the broker's error.
//
// # Versions
//
// Versions pins the highest version strata sends of each inter-broker API,
// the ones kmsg v1.15.1 encodes as Kafka does (reference kafka-zookeeper.md
// section 7): LeaderAndIsr 5, UpdateMetadata 7 (kmsg does not model v8's
// tagged Type), StopReplica 3 (kmsg writes v4's controller_epoch and
// is_kraft_controller in the wrong order), ControlledShutdown 3 (v0 needs
// header v0, which this package writes but kmsg's own formatter does not),
// AlterPartition 1 (topic names; v2+ identify topics by id), Fetch 12 and
// OffsetForLeaderEpoch 3 (replica id). Negotiate picks, per API, the lower
// of the pin and what the broker's ApiVersions allows.
package kwire
