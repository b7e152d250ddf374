package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after grace, as a kubelet
// restarting it does) and starts it again with the same command line: the same port,
// certificates and users, so every client keeps its configuration and reconnects. Between
// the two, during (nil for nothing) runs against the stopped cluster: e.g. CompactEtcd, so
// that every watch resumed after the restart is told its resource version is too old. The
// new process is stopped with the cluster. It returns once the new process answers /readyz,
// and whether the old one had to be killed.
func (c *Cluster) RestartAPIServer(ctx context.Context, grace time.Duration, during func(context.Context) error) (killed bool, err error) {
	pid, args, err := c.apiServerProcess()
	if err != nil {
		return false, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return false, fmt.Errorf("stopping kube-apiserver (pid %d): %w", pid, err)
	}
	for deadline := time.Now().Add(grace); processAlive(pid); time.Sleep(50 * time.Millisecond) {
		if !killed && time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
	}
	if c.apiServer != nil {
		c.apiServer.stop(0) // an earlier restart's process, already gone: reap it
	}
	if during != nil {
		if err := during(ctx); err != nil {
			return killed, err
		}
	}
	c.restarts++
	p, err := startProcess(fmt.Sprintf("kube-apiserver-%d", c.restarts), args[0], c.Dir, "", nil, args[1:]...)
	if err != nil {
		return killed, err
	}
	c.apiServer = p
	return killed, poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if done, err := p.exited(); done {
			return false, fmt.Errorf("kube-apiserver exited after the restart (%v, log %s)", err, p.logPath)
		}
		body, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// apiServerProcess finds the running kube-apiserver of this cluster: the one envtest started
// (a child of this process) or the last restart's, with its command line.
func (c *Cluster) apiServerProcess() (int, []string, error) {
	if c.apiServer != nil {
		if done, _ := c.apiServer.exited(); !done {
			return c.apiServer.cmd.Process.Pid, c.apiServer.cmd.Args, nil
		}
		return 0, nil, fmt.Errorf("kube-apiserver is not running (log %s)", c.apiServer.logPath)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	etcd := "--etcd-servers=" + c.env.ControlPlane.Etcd.URL.String()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for _, a := range args {
			if a == etcd {
				return pid, args, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver process with %s", etcd)
}

func processAlive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie (state Z, after the process name in parentheses) has exited.
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// EtcdClient is a client of the cluster's etcd; close it after use.
func (c *Cluster) EtcdClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{c.env.ControlPlane.Etcd.URL.String()}, DialTimeout: 10 * time.Second})
}

// CompactEtcd compacts etcd's history up to its current revision (writing bumps keys outside
// Kubernetes' /registry first, to move the revision past every resource version clients
// hold): a watch that must be resumed from an older resource version is then answered "too
// old resource version". It returns the revision compacted at.
func (c *Cluster) CompactEtcd(ctx context.Context, bumps int) (int64, error) {
	cli, err := c.EtcdClient()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	var rev int64
	for i := range max(bumps, 1) {
		resp, err := cli.Put(ctx, "/workmap-e2e/compaction-bump", strconv.Itoa(i))
		if err != nil {
			return 0, fmt.Errorf("writing to etcd: %w", err)
		}
		rev = resp.Header.Revision
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compacting etcd at revision %d: %w", rev, err)
	}
	return rev, nil
}
