package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The log of a measurement is written by a process of its own (tailbench
// run again with -write-child), so that the tailer's CPU time and the
// writer's are measured apart: rendering lines, lumberjack's writes, its
// rotation and its gzip of the backups are kube-apiserver's work, not the
// tailer's.
//
// The writer process reads its templates, says "ready", waits for the start
// time on its standard input, writes, waits for lumberjack to finish
// compressing the backups, and prints the CPU time it spent from its first
// line to then (templates and process start left out).

// writeJob is what one writer process writes.
type writeJob struct {
	Path     string // the live file
	First    int    // the first auditID's number
	Rate     int    // events/s from the start; 0: as fast as possible
	N        int
	MaxSize  int // lumberjack MaxSize, MB
	Compress bool
}

// writerProc is a running writer process.
type writerProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startWriter starts a writer process for job and waits until it is ready
// to write.
func (b *bench) startWriter(job writeJob) (*writerProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-write-child", string(spec), b.bundle)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the writer: %w", err)
	}
	w := &writerProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := w.out.ReadString('\n'); err != nil || line != "ready\n" {
		w.kill()
		return nil, fmt.Errorf("writer: not ready (%q, %v)", line, err)
	}
	return w, nil
}

// begin tells the writer to start writing, at rate from start.
func (w *writerProc) begin(start time.Time) error {
	_, err := fmt.Fprintf(w.in, "%d\n", start.UnixNano())
	if err == nil {
		err = w.in.Close()
	}
	return err
}

// wait waits for the writer to finish and returns the CPU time it spent
// writing.
func (w *writerProc) wait() (time.Duration, error) {
	line, rerr := w.out.ReadString('\n')
	if err := w.cmd.Wait(); err != nil {
		return 0, fmt.Errorf("writer: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if rerr != nil || err != nil {
		return 0, fmt.Errorf("writer: no CPU time reported (%q)", line)
	}
	return time.Duration(ns), nil
}

// kill ends a writer that is not waited for.
func (w *writerProc) kill() {
	w.cmd.Process.Kill()
	w.cmd.Wait()
}

// writeChild is the writer process: spec is its writeJob, args the bundle.
func writeChild(spec string, args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "tailbench writer:", err)
		return 1
	}
	var job writeJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		return fail(err)
	}
	if len(args) != 1 {
		return fail(fmt.Errorf("want the bundle, got %q", args))
	}
	ts, err := templates(args[0])
	if err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	var startNS int64
	if _, err := fmt.Scan(&startNS); err != nil {
		return fail(fmt.Errorf("read the start: %w", err))
	}
	cpu0 := cpuTime()
	if err := write(ts, job, time.Unix(0, startNS)); err != nil {
		return fail(err)
	}
	if job.Compress {
		if err := compressed(job.Path, time.Minute); err != nil {
			return fail(err)
		}
	}
	fmt.Println(int64(cpuTime() - cpu0))
	return 0
}

// write writes the job's events to its log, rotated by lumberjack, at its
// rate from start (0: at once).
func write(ts []template, job writeJob, start time.Time) error {
	lj := &lumberjack.Logger{Filename: job.Path, MaxSize: job.MaxSize, Compress: job.Compress}
	defer lj.Close()
	var line []byte
	one := func(i int) error {
		line = ts[i%len(ts)].render(line[:0], job.First+i, time.Now())
		_, err := lj.Write(line)
		return err
	}
	if job.Rate == 0 {
		for i := range job.N {
			if err := one(i); err != nil {
				return err
			}
		}
		return nil
	}
	// Every millisecond, the events due by then.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	i := 0
	for i < job.N {
		now := <-tick.C
		due := min(job.N, int(float64(now.Sub(start))/float64(time.Second)*float64(job.Rate)))
		for ; i < due; i++ {
			if err := one(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// compressed waits until lumberjack's goroutine has compressed every
// rotated backup of the live file path (it removes a backup once its .gz
// is complete), so that the writer's CPU time includes every gzip. It
// gives up after limit.
func compressed(path string, limit time.Duration) error {
	dir, base := filepath.Split(path)
	prefix := strings.TrimSuffix(base, filepath.Ext(base)) + "-"
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		plain := ""
		for _, e := range ents {
			if n := e.Name(); strings.HasPrefix(n, prefix) && !strings.HasSuffix(n, ".gz") {
				plain = n
			}
		}
		if plain == "" {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("%s: still not compressed after %s", plain, limit)
		}
	}
}
