// Package e2e holds Cohort's end-to-end tests against a five-node cluster
// of containers (deploy/Dockerfile, deploy/compose.yaml): a node killed
// with SIGKILL and restarted, a node cut off the network and reconnected,
// the whole cluster restarted — and after each, the lock service still
// serves every node with mutual exclusion and rising fencing tokens.
//
// The tests need Docker and docker-compose; CI has both.
package e2e
