// Package v1 is the demo.cpid.dev/v1 API of the example operator: a WebApp
// runs an image as a Deployment behind a Service.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of WebApp.
var GroupVersion = schema.GroupVersion{Group: "demo.cpid.dev", Version: "v1"}

// AddToScheme registers WebApp and WebAppList with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// WebApp is an image served by Replicas Pods on Port, behind a Service of
// the same name.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebAppSpec   `json:"spec,omitempty"`
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppSpec is what the user asks for.
type WebAppSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
	Port     int32  `json:"port"`
}

// WebAppStatus is what the operator saw of its Deployment.
type WebAppStatus struct {
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Replicas           int32  `json:"replicas,omitempty"`
	ReadyReplicas      int32  `json:"readyReplicas,omitempty"`
	Image              string `json:"image,omitempty"`
}

// WebAppList is a list of WebApps.
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

// DeepCopyInto copies w into out.
func (w *WebApp) DeepCopyInto(out *WebApp) {
	*out = *w
	out.TypeMeta = w.TypeMeta
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a copy of w.
func (w *WebApp) DeepCopy() *WebApp {
	if w == nil {
		return nil
	}
	out := new(WebApp)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *WebApp) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *WebAppList) DeepCopyInto(out *WebAppList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]WebApp, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *WebAppList) DeepCopy() *WebAppList {
	if l == nil {
		return nil
	}
	out := new(WebAppList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *WebAppList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
