package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/scram"
)

// maxAuthMessage bounds client messages before authentication succeeds.
const maxAuthMessage = 8192

// ignoredStartupParams are client startup parameters the proxy does not pass
// on to the backend: identity comes from the proxy's backend DSN.
var ignoredStartupParams = map[string]bool{"user": true, "database": true, "replication": true}

// handle runs one client connection from the first byte to the end.
func (s *Server) handle(raw net.Conn) {
	log := s.log.With("client", raw.RemoteAddr().String())
	_ = raw.SetDeadline(time.Now().Add(s.cfg.StartupTimeout))
	conn, p, usedTLS, err := negotiateStartup(raw, s.cfg.TLS)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			log.Info("connection closed during start-up", "err", err)
		}
		return
	}
	conn = fastConn(conn)
	w := bufio.NewWriterSize(conn, 16<<10)
	if p.code == cancelRequestCode {
		s.cancel(p.body)
		return
	}
	if major := p.code >> 16; major != protocolMajor3 {
		sendFatal(w, fatal(codeFeatureNotSupported, fmt.Sprintf("unsupported frontend protocol %d.%d: server supports 3.0", major, p.code&0xffff)))
		return
	}
	if err := p.parseParams(); err != nil {
		sendFatal(w, fatal(codeProtocolViolation, "invalid startup packet: "+err.Error()))
		return
	}
	if minor := p.code & 0xffff; minor > 0 {
		// We speak 3.0: say so, and name the protocol options we ignore.
		var unknown []string
		for _, k := range p.order {
			if len(k) > 4 && k[:4] == "_pq_" {
				unknown = append(unknown, k)
			}
		}
		if _, err := writeMsg(w, nil, &pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown}); err != nil {
			return
		}
	}
	if s.cfg.RequireTLS && !usedTLS {
		sendFatal(w, fatal(codeInvalidAuthorization, "the proxy requires TLS (sslmode=require or stronger)"))
		return
	}
	if _, ok := p.params["replication"]; ok && p.params["replication"] != "false" && p.params["replication"] != "0" {
		sendFatal(w, fatal(codeFeatureNotSupported, "replication connections are not supported by the proxy"))
		return
	}
	user := p.params["user"]
	if user == "" {
		sendFatal(w, fatal(codeInvalidAuthorization, "no PostgreSQL user name specified in startup packet"))
		return
	}
	log = log.With("user", user)

	r := newMsgReader(conn, 16<<10, maxAuthMessage)
	if err := s.authenticate(r, w, user); err != nil {
		if errors.Is(err, scram.ErrAuthFailed) {
			log.Warn("authentication failed")
			sendFatal(w, fatal(codeInvalidPassword, fmt.Sprintf("password authentication failed for user %q", user)))
		} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			log.Info("authentication aborted", "err", err)
			sendFatal(w, fatal(codeProtocolViolation, "authentication aborted: "+err.Error()))
		}
		return
	}
	r.max = s.cfg.MaxMessageSize
	// Before the backend: a client over the limit costs the server nothing.
	if n := s.clients.Add(1); s.cfg.MaxClientConns > 0 && n > int64(s.cfg.MaxClientConns) {
		s.clients.Add(-1)
		log.Warn("client refused: too many clients", "max_client_conn", s.cfg.MaxClientConns)
		sendFatal(w, fatal(codeTooManyConnections, "sorry, too many clients already"))
		return
	}
	defer s.clients.Add(-1)
	if s.cfg.OnSession != nil {
		defer s.cfg.OnSession()()
	}

	ss := &session{srv: s, log: log, rawClient: raw, client: conn, cr: r, cw: w}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StartupTimeout)
	err = ss.connectBackend(ctx, p)
	cancel()
	if err != nil {
		log.Error("cannot connect to backend", "err", err)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			pe.Severity = "FATAL"
			sendFatal(w, errorResponse(pe, "FATAL"))
		} else {
			sendFatal(w, fatal(codeConnectionFailure, "the proxy could not connect to the backend server"))
		}
		return
	}
	// Registered only now: a cancel key is usable once the backend exists.
	if err := s.register(ss); err != nil {
		ss.backend.Close()
		sendFatal(w, fatal(codeAdminShutdown, "the proxy is shutting down"))
		return
	}
	defer s.unregister(ss)
	ss.log = log.With("session", ss.id())
	_ = raw.SetDeadline(time.Time{})

	info := SessionInfo{User: user, Database: p.params["database"], ApplicationName: p.params["application_name"], ServerParams: ss.serverParams,
		BackendPID: ss.backendPID, Defer: ss.deferUntilAnswered, Exec: ss.execSide, ExecQuery: ss.execSideQuery, DescribeQuery: ss.describeSide, TxEpoch: ss.txEpochNow}
	if f := s.cfg.Interceptors; f != nil {
		ic, err := f(context.Background(), info)
		if err != nil {
			ss.backend.Close()
			log.Error("session set-up failed", "err", err)
			sendFatal(w, errorResponse(err, "FATAL"))
			return
		}
		ss.ic = ic
	}
	if err := ss.greet(); err != nil {
		ss.backend.Close()
		return
	}
	ss.log.Info("session started", "application_name", info.ApplicationName, "tls", usedTLS)
	start := time.Now()
	ss.run()
	ss.log.Info("session ended", "duration", time.Since(start).Round(time.Millisecond).String())
}

// authenticate runs the configured authentication exchange and sends
// AuthenticationOk on success.
func (s *Server) authenticate(r *msgReader, w *bufio.Writer, user string) error {
	if s.cfg.Auth == AuthTrust {
		_, err := writeMsg(w, nil, &pgproto3.AuthenticationOk{})
		return err
	}
	conv := scram.NewConversation(s.cfg.Users[user], scram.MockSalt(s.mockSecret, user))
	if _, err := writeMsg(w, nil, &pgproto3.AuthenticationSASL{AuthMechanisms: []string{scram.Mechanism}}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	msg, err := r.next()
	if err != nil {
		return err
	}
	if msg[0] != 'p' {
		return fmt.Errorf("expected SASLInitialResponse, got message type %q", msg[0])
	}
	var initial pgproto3.SASLInitialResponse
	if err := initial.Decode(body(msg)); err != nil {
		return err
	}
	if initial.AuthMechanism != scram.Mechanism {
		return fmt.Errorf("unsupported SASL mechanism %q", initial.AuthMechanism)
	}
	first, err := conv.First(initial.Data)
	if err != nil {
		return err
	}
	if _, err := writeMsg(w, nil, &pgproto3.AuthenticationSASLContinue{Data: first}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if msg, err = r.next(); err != nil {
		return err
	}
	if msg[0] != 'p' {
		return fmt.Errorf("expected SASLResponse, got message type %q", msg[0])
	}
	final, err := conv.Final(body(msg))
	if err != nil {
		return err
	}
	if _, err := writeMsg(w, nil, &pgproto3.AuthenticationSASLFinal{Data: final}); err != nil {
		return err
	}
	_, err = writeMsg(w, nil, &pgproto3.AuthenticationOk{})
	return err
}

// connectBackend opens the session's server connection with the proxy's
// credentials, passing on the client's run-time parameters.
func (ss *session) connectBackend(ctx context.Context, p *startupPacket) error {
	cfg := ss.srv.cfg.Backend.Copy()
	cfg.RuntimeParams = maps.Clone(cfg.RuntimeParams)
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for _, k := range p.order {
		if !ignoredStartupParams[k] {
			cfg.RuntimeParams[k] = p.params[k]
		}
	}
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	// A write slower than 15 ms during the connect makes pgconn start a
	// background reader that may still sit in a read of the socket; it
	// would swallow the answer to the client's first statement.
	if err := pc.SyncConn(ctx); err != nil {
		pc.Close(ctx)
		return err
	}
	hj, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return err
	}
	ss.backend = fastConn(hj.Conn)
	ss.backendPID = hj.PID
	ss.backendSecret = hj.SecretKey
	ss.backendAddr = hj.Conn.RemoteAddr()
	ss.serverParams = hj.ParameterStatuses
	ss.br = newMsgReader(ss.backend, 32<<10, 1<<30)
	ss.bw = bufio.NewWriterSize(ss.backend, 16<<10)
	ss.txStatus.Store(uint32('I'))
	return nil
}

// greet sends the rest of the start-up answer: the backend's parameters,
// the proxy's own BackendKeyData and ReadyForQuery.
func (ss *session) greet() error {
	var buf []byte
	var err error
	for _, k := range slices.Sorted(maps.Keys(ss.serverParams)) {
		if buf, err = writeMsg(ss.cw, buf, &pgproto3.ParameterStatus{Name: k, Value: ss.serverParams[k]}); err != nil {
			return err
		}
	}
	key := &pgproto3.BackendKeyData{ProcessID: uint32(ss.key >> 32), SecretKey: []byte{byte(ss.key >> 24), byte(ss.key >> 16), byte(ss.key >> 8), byte(ss.key)}}
	if buf, err = writeMsg(ss.cw, buf, key); err != nil {
		return err
	}
	if _, err = writeMsg(ss.cw, buf, &pgproto3.ReadyForQuery{TxStatus: 'I'}); err != nil {
		return err
	}
	return ss.cw.Flush()
}
