// Package controllerruntime adopts cpid's CPIDs in a controller-runtime
// (kubebuilder) operator in one line: every create, update and patch of the
// manager's clients is stamped by instrument/clientgo's Stamper, which merges
// the trace contexts of the write's causes (the object's own, its owners' as
// the manager's cache holds them) with the paper's Algorithm 1.
//
// In a kubebuilder project's cmd/main.go:
//
//	mgr, err := cpidctrl.NewManager("my-operator", ctrl.GetConfigOrDie(), ctrl.Options{...})
//
// in place of ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{...}),
// with the import cpidctrl "github.com/cpid-dev/cpid/instrument/controllerruntime".
// Nothing in the reconcilers changes. The mergelogs go through the manager's
// logger (Options.Logger, else controller-runtime's log.Log) under the name
// "cpid", as JSON when the operator logs JSON (zap's production encoder).
//
// Owners are looked up in the manager's cache, for the kinds the manager
// already watches (For, Owns, Watches): a lookup never starts an informer
// nor calls the apiserver on the write path. An object written without owner
// references gets its cause from the request's context only
// (instrument.NewContext).
//
// This package is a Go module of its own, so that importing
// github.com/cpid-dev/cpid/instrument does not pull in controller-runtime.
package controllerruntime
