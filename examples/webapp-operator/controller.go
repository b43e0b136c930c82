package main

import (
	"context"

	demov1 "github.com/cpid-dev/cpid/examples/webapp-operator/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// reconciler makes a WebApp's Deployment and Service (both owned by the
// WebApp, so that deleting it deletes them) and reports the Deployment's
// replicas in the WebApp's status. It knows nothing of cpid.
type reconciler struct {
	client.Client
	scheme *runtime.Scheme
}

func (r *reconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.WebApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Complete(r)
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var app demov1.WebApp
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	labels := map[string]string{"app.kubernetes.io/name": app.Name, "app.kubernetes.io/managed-by": "webapp-operator"}

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		mutateDeployment(dep, &app, labels)
		return controllerutil.SetControllerReference(&app, dep, r.scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		log.Info("deployment "+string(op), "deployment", dep.Name, "replicas", app.Spec.Replicas, "image", app.Spec.Image)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	op, err = controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		mutateService(svc, &app, labels)
		return controllerutil.SetControllerReference(&app, svc, r.scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		log.Info("service "+string(op), "service", svc.Name, "port", app.Spec.Port)
	}

	st := demov1.WebAppStatus{ObservedGeneration: app.Generation, Replicas: dep.Status.Replicas,
		ReadyReplicas: dep.Status.ReadyReplicas, Image: app.Spec.Image}
	if st != app.Status {
		app.Status = st
		if err := r.Status().Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("status updated", "replicas", st.Replicas, "readyReplicas", st.ReadyReplicas)
	}
	return ctrl.Result{}, nil
}

// mutateDeployment sets the fields of dep the WebApp decides, in place, so
// that the fields the apiserver defaulted stay as they are and an unchanged
// WebApp writes nothing.
func mutateDeployment(dep *appsv1.Deployment, app *demov1.WebApp, labels map[string]string) {
	if dep.Labels == nil {
		dep.Labels = map[string]string{}
	}
	for k, v := range labels {
		dep.Labels[k] = v
	}
	dep.Spec.Replicas = &app.Spec.Replicas
	if dep.Spec.Selector == nil { // immutable once created
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	dep.Spec.Template.Labels = labels
	pod := &dep.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		pod.Containers = []corev1.Container{{Name: "web"}}
	}
	c := &pod.Containers[0]
	c.Image = app.Spec.Image
	port := corev1.ContainerPort{Name: "http", ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}
	if len(c.Ports) != 1 || c.Ports[0] != port {
		c.Ports = []corev1.ContainerPort{port}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		c.Resources.Requests[corev1.ResourceCPU] = resourceQuantity("10m")
	}
	if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
		c.Resources.Requests[corev1.ResourceMemory] = resourceQuantity("16Mi")
	}
}

// mutateService sets the fields of svc the WebApp decides, in place (the
// ClusterIP the apiserver gave it stays).
func mutateService(svc *corev1.Service, app *demov1.WebApp, labels map[string]string) {
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	for k, v := range labels {
		svc.Labels[k] = v
	}
	svc.Spec.Selector = labels
	port := corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: app.Spec.Port,
		TargetPort: intstr.FromInt32(app.Spec.Port)}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0] != port {
		svc.Spec.Ports = []corev1.ServicePort{port}
	}
}
