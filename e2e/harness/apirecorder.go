package harness

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIRecorder is a loopback proxy in front of the cluster's API server that records every
// request sent through it, when it arrived: what a process really sent, whichever of its
// clients sent it. A process reaches it through Kubeconfig (plain HTTP on loopback, no
// credentials); the proxy forwards as the cluster's admin.
type APIRecorder struct {
	// Kubeconfig is the path of a kubeconfig file that points at the proxy.
	Kubeconfig string

	mu       sync.Mutex
	requests []APIRequest
}

// APIRequest is one request the recorder forwarded.
type APIRequest struct {
	At     time.Time
	Method string
	Path   string
	// Watch is true for a watch (it stays open; it takes one token of a client's budget like
	// any request).
	Watch bool
}

// StartAPIRecorder starts a recording proxy; it stops with the cluster.
func (c *Cluster) StartAPIRecorder() *APIRecorder {
	c.t.Helper()
	upstream, err := rest.TransportFor(c.Config)
	if err != nil {
		c.t.Fatal(err)
	}
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		c.t.Fatal(err)
	}
	r := &APIRecorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport:     upstream,
		FlushInterval: -1, // watches stream
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	server := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.record(APIRequest{At: time.Now(), Method: req.Method, Path: req.URL.Path, Watch: req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"})
		proxy.ServeHTTP(w, req)
	})}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.t.Logf("API recorder: %v", err)
		}
	}()
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = server.Shutdown(ctx) // watches are cut when the processes stop
		_ = server.Close()
	})
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["recorder"] = &clientcmdapi.Cluster{Server: "http://" + listener.Addr().String()}
	kubeconfig.AuthInfos["recorder"] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts["recorder"] = &clientcmdapi.Context{Cluster: "recorder", AuthInfo: "recorder"}
	kubeconfig.CurrentContext = "recorder"
	r.Kubeconfig = filepath.Join(c.Dir, "recorder.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, r.Kubeconfig); err != nil {
		c.t.Fatal(err)
	}
	return r
}

func (r *APIRecorder) record(req APIRequest) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
}

// Requests returns the requests recorded so far, in the order they arrived.
func (r *APIRecorder) Requests() []APIRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]APIRequest(nil), r.requests...)
}
