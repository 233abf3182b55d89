// Package wire is the client-facing side of the proxy: it speaks the
// PostgreSQL frontend/backend protocol (version 3.0) to clients, terminates
// their TLS and SCRAM-SHA-256 authentication, opens one backend connection
// per client session with the proxy's own credentials, and relays messages
// in both directions.
//
// Relaying is done on raw message frames; a message is decoded only when an
// Interceptor asked to see it. Output is flushed whenever the relay would
// otherwise block on reading (so at ReadyForQuery, after a client Flush, at
// CopyInResponse and for asynchronous notifications), never per message.
//
// The Interceptor is the seam for statement rewriting: per session it sees
// every Query and Parse before the server does, may rewrite or refuse it,
// and may attach rewriters for the Bind parameters, ParameterDescription,
// RowDescription and DataRow messages that belong to that statement or its
// portals.
package wire
