package wire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/scram"
)

// AuthMode says how clients authenticate to the proxy.
type AuthMode string

const (
	// AuthSCRAM requires SCRAM-SHA-256 against Config.Users.
	AuthSCRAM AuthMode = "scram-sha-256"
	// AuthTrust accepts every client without a password. It is refused on
	// listeners that are not loopback addresses.
	AuthTrust AuthMode = "trust"
)

// Config configures a Server. Backend is required.
type Config struct {
	// Backend is the server to relay to, with the proxy's own credentials.
	// Each session connects with a copy of it; TLS follows its sslmode.
	Backend *pgconn.Config
	// TLS, when set, lets clients upgrade with SSLRequest.
	TLS *tls.Config
	// RequireTLS refuses clients that did not upgrade to TLS.
	RequireTLS bool
	// Auth and Users decide who may connect.
	Auth  AuthMode
	Users scram.Users
	// MaxMessageSize bounds the body of a client message (default 16 MiB).
	MaxMessageSize int
	// MaxClientConns bounds the authenticated client sessions; more are
	// refused with FATAL 53300 before the backend is contacted (0: no
	// limit).
	MaxClientConns int
	// StartupTimeout bounds TLS, startup and authentication (default 30 s).
	StartupTimeout time.Duration
	// Interceptors, if set, gives each session its Interceptor.
	Interceptors InterceptorFactory
	// OnSession, if set, is called as each client session is admitted
	// (authenticated, within MaxClientConns); the function it returns is
	// called when the session ends.
	OnSession func() (ended func())
	// Logger receives structured logs (default slog.Default()). Query texts
	// are logged at debug level only; parameter values never.
	Logger *slog.Logger
}

// DefaultMaxMessageSize is the default limit for a client message body.
const DefaultMaxMessageSize = 16 << 20

// DefaultMaxClientConns is the default MaxClientConns of the proxy's
// serve command (PgBouncer's default max_client_conn).
const DefaultMaxClientConns = 100

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("wire: server closed")

// Server accepts client connections and relays each to its own backend
// session.
type Server struct {
	cfg        Config
	log        *slog.Logger
	mockSecret []byte

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	sessions  map[uint64]*session // by the BackendKeyData we gave the client
	conns     map[net.Conn]struct{}
	closing   atomic.Bool
	clients   atomic.Int64 // authenticated sessions, for MaxClientConns
	wg        sync.WaitGroup
}

// NewServer checks cfg and returns a Server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("wire: no backend configured")
	}
	switch cfg.Auth {
	case AuthSCRAM:
		if len(cfg.Users) == 0 {
			return nil, errors.New("wire: scram-sha-256 authentication needs at least one user")
		}
	case AuthTrust:
	default:
		return nil, fmt.Errorf("wire: unknown auth mode %q (want %q or %q)", cfg.Auth, AuthSCRAM, AuthTrust)
	}
	if cfg.RequireTLS && cfg.TLS == nil {
		return nil, errors.New("wire: RequireTLS without a TLS configuration")
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return &Server{
		cfg: cfg, log: cfg.Logger, mockSecret: secret,
		listeners: map[net.Listener]struct{}{},
		sessions:  map[uint64]*session{},
		conns:     map[net.Conn]struct{}{},
	}, nil
}

// IsLoopback reports whether addr (host:port) is a loopback address.
func IsLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// Serve accepts connections on ln until Shutdown or Close. It always returns
// a non-nil error; ErrServerClosed after Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.Auth == AuthTrust && !IsLoopback(ln.Addr()) {
		return fmt.Errorf("wire: refusing trust authentication on non-loopback listener %s", ln.Addr())
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTemporaryAccept) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			conn.Close()
			return ErrServerClosed
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				conn.Close()
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
			}()
			defer func() {
				// One connection's bug never takes the proxy down.
				if v := recover(); v != nil {
					s.log.Error("connection ended by a panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				}
			}()
			s.handle(conn)
		}()
	}
}

var errTemporaryAccept = errors.New("temporary accept error")

// ActiveSessions returns the number of sessions relaying to a backend.
func (s *Server) ActiveSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Shutdown stops accepting connections and lets sessions finish: idle
// sessions are closed at once with FATAL 57P01, sessions inside a
// transaction or a statement at their next idle point. When ctx ends first,
// the remaining sessions are terminated. Shutdown returns when every
// connection is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	for _, ss := range s.sessions {
		ss.drain()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.terminateAll()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.closeAllConns()
		<-done
	}
	return ctx.Err()
}

// Close stops accepting connections and terminates every session now.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.terminateAll()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.closeAllConns()
		<-done
	}
	return nil
}

func (s *Server) terminateAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		ss.terminate()
	}
	// Connections still in start-up have no session yet.
	for c := range s.conns {
		if !s.hasSessionLocked(c) {
			c.Close()
		}
	}
}

func (s *Server) hasSessionLocked(c net.Conn) bool {
	for _, ss := range s.sessions {
		if ss.rawClient == c {
			return true
		}
	}
	return false
}

func (s *Server) closeAllConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// register gives a session a unique BackendKeyData.
func (s *Server) register(ss *session) error {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		pid := binary.BigEndian.Uint32(b[:4]) &^ (1 << 31) // positive, like a real pid
		if pid == 0 {
			continue
		}
		key := uint64(pid)<<32 | uint64(binary.BigEndian.Uint32(b[4:]))
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			return ErrServerClosed
		}
		if _, taken := s.sessions[key]; !taken {
			s.sessions[key] = ss
			ss.key = key
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
	}
	return errors.New("wire: could not allocate a cancel key")
}

func (s *Server) unregister(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss.key)
	s.mu.Unlock()
}

// cancel forwards a client's CancelRequest to the backend of the session it
// names. Unknown keys are ignored, as PostgreSQL does.
func (s *Server) cancel(body []byte) {
	if len(body) != 8 {
		return
	}
	key := binary.BigEndian.Uint64(body)
	s.mu.Lock()
	ss := s.sessions[key]
	s.mu.Unlock()
	if ss == nil {
		s.log.Debug("cancel request for unknown session")
		return
	}
	if err := ss.cancelBackend(); err != nil {
		s.log.Warn("forwarding cancel request failed", "session", ss.id(), "err", err)
	}
}
