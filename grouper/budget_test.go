package grouper_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/workmap/workmap/grouper"
)

func TestOneBudget(t *testing.T) {
	own := flowcontrol.NewTokenBucketRateLimiter(7, 9)
	for name, tc := range map[string]struct {
		cfg *rest.Config
		// want is the limiter every client shares (nil: a new one of QPS and Burst).
		want        flowcontrol.RateLimiter
		wantQPS     float32
		wantLimited bool
	}{
		"a config without a limiter gets one bucket of its QPS and burst": {
			cfg: &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100}, wantQPS: 50, wantLimited: true,
		},
		"a config that has a limiter keeps it": {
			cfg: &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100, RateLimiter: own}, want: own, wantQPS: 7, wantLimited: true,
		},
		"client-go's defaults when QPS and burst are unset": {
			cfg: &rest.Config{Host: "https://127.0.0.1:1"}, wantQPS: rest.DefaultQPS, wantLimited: true,
		},
		"a negative QPS stays unlimited": {
			cfg: &rest.Config{Host: "https://127.0.0.1:1", QPS: -1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := grouper.OneBudget(tc.cfg)
			kube, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			rc, err := rest.RESTClientFor(withCodec(cfg))
			require.NoError(t, err)
			_, err = metadata.NewForConfig(cfg)
			require.NoError(t, err)
			shared := kube.CoreV1().RESTClient().GetRateLimiter()
			if !tc.wantLimited {
				assert.Nil(t, shared)
				assert.Nil(t, rc.GetRateLimiter())
				return
			}
			require.NotNil(t, shared)
			assert.Same(t, shared, kube.BatchV1().RESTClient().GetRateLimiter(), "one bucket for every group of the clientset")
			assert.Same(t, shared, rc.GetRateLimiter(), "and for every other client made from the config")
			if tc.want != nil {
				assert.Same(t, tc.want, shared)
			}
			assert.Equal(t, tc.wantQPS, shared.QPS())
		})
	}
}

func TestWithBudget(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100}
	scheduler, err := kubernetes.NewForConfig(grouper.OneBudget(cfg))
	require.NoError(t, err)
	limiter := scheduler.CoreV1().RESTClient().GetRateLimiter()
	grouperClient, err := kubernetes.NewForConfig(grouper.WithBudget(cfg, limiter))
	require.NoError(t, err)
	assert.Same(t, limiter, grouperClient.CoreV1().RESTClient().GetRateLimiter(), "the grouper draws from the scheduler client's bucket")
	assert.Nil(t, cfg.RateLimiter, "the caller's config is not changed")

	unlimited, err := kubernetes.NewForConfig(grouper.WithBudget(cfg, nil))
	require.NoError(t, err)
	assert.Nil(t, unlimited.CoreV1().RESTClient().GetRateLimiter(), "an unlimited scheduler client: an unlimited grouper")
}

// withCodec is cfg ready for rest.RESTClientFor (a group version and serializer).
func withCodec(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}
