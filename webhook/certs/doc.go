// Package certs provides workmap-webhook's TLS serving certificate. The Kubernetes API server
// calls the webhook over HTTPS and trusts it only if its certificate chains to the caBundle of
// its webhook configurations, so certificate and caBundle must agree at all times.
//
// A Manager works in one of two modes:
//
//   - Files: an external issuer such as cert-manager writes tls.crt and tls.key into a
//     directory (a mounted Secret). The Manager serves them and reloads them when they change.
//     Keeping the caBundle current is the issuer's job (cert-manager's cainjector).
//
//   - Self-managed, for clusters without cert-manager: the Manager makes its own CA and serving
//     certificate and keeps them in a Secret, so that every replica and every restart serves
//     the same ones. The Secret holds tls.crt and tls.key (serving certificate and key),
//     ca.crt and ca.key (the current CA) and ca-bundle.crt (every CA still trusted). A check at
//     start and then every hour renews a certificate once less than a third of its lifetime is
//     left, and writes ca-bundle.crt into clientConfig.caBundle of every webhook of the named
//     Mutating- and ValidatingWebhookConfigurations. A renewed CA is added to the bundle next to the one it
//     replaces, which stays until it expires; the serving certificate moves to the new CA only
//     some minutes later, once API servers have had time to see the new bundle. A watch on the
//     named configurations puts the caBundle back right after a reinstall resets it.
//     Replicas coordinate through the Secret alone: it is created with Create, changed with
//     Update carrying the resourceVersion that was read, and re-read and retried on conflict.
//
// Self-managed mode needs RBAC to get, create and update the Secret, and to get, list, watch
// and patch the named webhook configurations (all of which may be restricted with
// resourceNames). Tools that apply the configuration (Helm, Argo CD) should ignore differences
// in caBundle, or they and the Manager will keep resetting each other's value.
//
// The self-managed mode is not built on a generic rotator such as
// github.com/open-policy-agent/cert-controller because that one swaps CA, serving certificate
// and caBundle at once (the caBundle trusts only the newest CA, so a replica or an API server
// one step behind fails the TLS handshake), makes no IP address SANs (--cert-ips), does not
// create its Secret, and needs list and watch of every Secret in the namespace and update of
// every webhook configuration, where this package asks for its Secret and configurations by
// name. The certificate file watching of files mode is controller-runtime's certwatcher.
package certs
