// Package pgtest starts a throwaway PostgreSQL server for tests, from the
// binaries of the Debian postgresql package: initdb in a temporary
// directory, a server on a unix socket there, stopped and removed at the
// end. Tests, cmd/tailbench and cmd/incbench import it; cpid-tui never does, so it never
// ships in the product's binary.
//
// PostgreSQL refuses to run as root, and CI runs as root: then the server
// runs as the unprivileged user "postgres" (the package creates it), or
// "nobody".
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running throwaway server.
type Server struct {
	dir      string // data directory, socket and log inside
	bin      string // of the server's binaries
	settings []string
	cmd      *exec.Cmd
	base     string // DSN of the postgres database
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	dbSeq      atomic.Int64
)

// Main runs the tests of a package and stops the shared server, if one was
// started, then calls after: call it from TestMain.
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// NewDatabase returns the DSN of a new, empty database on the package's
// shared server (started on first use), dropped when the test ends. When
// PostgreSQL is not installed the test is skipped, or fails when the
// environment variable CI is set.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		if errors.Is(sharedErr, errNotInstalled) && os.Getenv("CI") == "" {
			tb.Skipf("PostgreSQL tests skipped: %v", sharedErr)
		}
		tb.Fatalf("PostgreSQL: %v", sharedErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx := context.Background()
	dsn, err := shared.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(ctx, shared.base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	})
	return dsn
}

var errNotInstalled = errors.New("no PostgreSQL server binaries (install the Debian package postgresql)")

// bindir finds the newest /usr/lib/postgresql/N/bin holding initdb and
// postgres, or the directory of pg_ctl on PATH.
func bindir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
				return d, nil
			}
		}
	}
	return "", errNotInstalled
}

// Start starts a server in a new temporary directory. The tests' server
// does not fsync; settings ("fsync=on") are passed to it after the
// defaults, so they override them.
func Start(settings ...string) (*Server, error) {
	bin, err := bindir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cpid-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, settings: settings}
	cred, err := credential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "cpid", "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	s.base = s.DSN("postgres")
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// StartTest starts a server of the test's own (Start), stopped when the
// test ends: for a test that stops or kills it. Without PostgreSQL the
// test is skipped, or fails when CI is set, as with NewDatabase.
func StartTest(tb testing.TB, settings ...string) *Server {
	tb.Helper()
	s, err := Start(settings...)
	if err != nil {
		if errors.Is(err, errNotInstalled) && os.Getenv("CI") == "" {
			tb.Skipf("PostgreSQL tests skipped: %v", err)
		}
		tb.Fatalf("PostgreSQL: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// start runs the server on the data directory and waits until it accepts
// connections.
func (s *Server) start() error {
	cred, err := credential(s.dir)
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"), "-k", s.dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	for _, kv := range s.settings {
		s.cmd.Args = append(s.cmd.Args, "-c", kv)
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), s.base)
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.kill()
			return fmt.Errorf("server did not start: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill kills the server and every process of it at once (SIGKILL), as a
// crash would: its clients' connections end in the middle of whatever they
// were doing. Restart starts it again. (The backends run in sessions of
// their own: they are found by their parent.)
func (s *Server) Kill() {
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	kids := children(s.cmd.Process.Pid)
	s.cmd.Process.Kill()
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	s.cmd.Wait()
	// Until they are gone, the old backends hold the shared memory a
	// restart needs.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		alive := false
		for _, pid := range kids {
			alive = alive || running(pid)
		}
		if !alive {
			return
		}
	}
}

// children are the processes whose parent is pid (from /proc).
func children(pid int) []int {
	procs, _ := readProcs() // one that exits meanwhile is not a child
	var out []int
	for kid, p := range procs {
		if p.ppid == pid {
			out = append(out, kid)
		}
	}
	return out
}

// proc is what /proc/PID/stat says of a process.
type proc struct {
	state string
	ppid  int
	// ticks is its CPU time and that of the children it waited for
	// (utime, stime, cutime, cstime), in clock ticks.
	ticks int64
}

// statOf parses /proc/PID/stat: pid (comm) state ppid ... (comm may hold
// spaces and parentheses); utime stime cutime cstime are fields 14 to 17.
func statOf(b []byte) (proc, error) {
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 15 {
		return proc{}, fmt.Errorf("pgtest: stat of %d fields", len(f))
	}
	p := proc{state: f[0]}
	var err error
	if p.ppid, err = strconv.Atoi(f[1]); err != nil {
		return proc{}, fmt.Errorf("pgtest: stat: %w", err)
	}
	for _, x := range f[11:15] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return proc{}, fmt.Errorf("pgtest: stat: %w", err)
		}
		p.ticks += v
	}
	return p, nil
}

// readProcs reads every process of /proc once; fs.ErrNotExist (with what
// it read) when one of those listed exited before it was read.
func readProcs() (map[int]proc, error) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make(map[int]proc, len(stats))
	var gone error
	for _, f := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			gone = fs.ErrNotExist
			continue
		}
		if p, err := statOf(b); err == nil {
			out[pid] = p
		}
	}
	return out, gone
}

// CPU is the CPU time (user and system) the server has used since it
// started: that of the process started and of its descendants, running
// or exited (those a parent waited for count in its children's time: the
// backends of closed connections in the postmaster's). Read from /proc:
// an error elsewhere. Benchmarks read it before and after a measurement
// (cmd/tailbench: the server's CPU an event a fleet stores).
func (s *Server) CPU() (time.Duration, error) {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0, fmt.Errorf("pgtest: no server running")
	}
	return TreeCPU(s.cmd.Process.Pid)
}

// TreeCPU is the CPU time (user and system) process pid and its
// descendants have used, running or exited, as Server.CPU counts it: a
// server's postmaster gives the server's (cmd/incbench, for a server it
// did not start). Read from /proc: an error elsewhere.
func TreeCPU(pid int) (time.Duration, error) {
	// A process that exits while /proc is read may be in neither its own
	// stat nor its parent's (a backend whose connection just closed):
	// /proc is read again then.
	for range 100 {
		procs, err := readProcs()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		root, ok := procs[pid]
		if !ok {
			return 0, fmt.Errorf("pgtest: no process %d in /proc", pid)
		}
		kids := map[int][]int{}
		for child, p := range procs {
			kids[p.ppid] = append(kids[p.ppid], child)
		}
		total := root.ticks
		for todo := kids[pid]; len(todo) > 0; {
			p := todo[len(todo)-1]
			todo = append(todo[:len(todo)-1], kids[p]...)
			total += procs[p].ticks
		}
		// USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
		return time.Duration(total) * (time.Second / 100), nil
	}
	return 0, fmt.Errorf("pgtest: the processes changed at every read of /proc")
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	p, err := statOf(b)
	return err == nil && p.state != "Z"
}

// Restart starts a killed server again on its data directory (it
// recovers from its write-ahead log first).
func (s *Server) Restart() error { return s.start() }

// credential is nil, or when running as root the unprivileged user the
// server runs as, the directory handed to it.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root and no unprivileged user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// CreateDatabase creates database name and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// Version is the server's version, as SHOW server_version says it.
func (s *Server) Version() string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return "?"
	}
	defer conn.Close(ctx)
	var v string
	if conn.QueryRow(ctx, `SHOW server_version`).Scan(&v) != nil {
		return "?"
	}
	return v
}

// DSN is the connection string of database db.
func (s *Server) DSN(db string) string {
	return "postgres://cpid@/" + db + "?host=" + url.QueryEscape(s.dir) + "&sslmode=disable"
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil && s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(s.dir)
}
