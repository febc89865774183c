package kube

// The Kubernetes objects tunebench writes, with only the fields it sets;
// names and JSON keys are the API's (batch/v1 Job, core/v1 PodSpec).

type ObjectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type Job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   ObjectMeta `yaml:"metadata"`
	Spec       JobSpec    `yaml:"spec"`
}

type JobSpec struct {
	CompletionMode       string          `yaml:"completionMode,omitempty"`
	Completions          *int32          `yaml:"completions,omitempty"`
	Parallelism          *int32          `yaml:"parallelism,omitempty"`
	BackoffLimit         *int32          `yaml:"backoffLimit,omitempty"`
	BackoffLimitPerIndex *int32          `yaml:"backoffLimitPerIndex,omitempty"`
	MaxFailedIndexes     *int32          `yaml:"maxFailedIndexes,omitempty"`
	Template             PodTemplateSpec `yaml:"template"`
}

type PodTemplateSpec struct {
	Metadata ObjectMeta `yaml:"metadata"`
	Spec     PodSpec    `yaml:"spec"`
}

type PodSpec struct {
	RestartPolicy   string              `yaml:"restartPolicy"`
	SecurityContext *PodSecurityContext `yaml:"securityContext,omitempty"`
	Affinity        *Affinity           `yaml:"affinity,omitempty"`
	Containers      []Container         `yaml:"containers"`
	Volumes         []Volume            `yaml:"volumes,omitempty"`
}

type PodSecurityContext struct {
	RunAsNonRoot *bool  `yaml:"runAsNonRoot,omitempty"`
	RunAsUser    *int64 `yaml:"runAsUser,omitempty"`
	RunAsGroup   *int64 `yaml:"runAsGroup,omitempty"`
	FSGroup      *int64 `yaml:"fsGroup,omitempty"`
}

type Container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	Args            []string         `yaml:"args,omitempty"`
	Env             []EnvVar         `yaml:"env,omitempty"`
	VolumeMounts    []VolumeMount    `yaml:"volumeMounts,omitempty"`
	SecurityContext *SecurityContext `yaml:"securityContext,omitempty"`
}

type EnvVar struct {
	Name      string        `yaml:"name"`
	Value     string        `yaml:"value,omitempty"`
	ValueFrom *EnvVarSource `yaml:"valueFrom,omitempty"`
}

type EnvVarSource struct {
	SecretKeyRef *SecretKeySelector   `yaml:"secretKeyRef,omitempty"`
	FieldRef     *ObjectFieldSelector `yaml:"fieldRef,omitempty"`
}

type ObjectFieldSelector struct {
	FieldPath string `yaml:"fieldPath"`
}

type SecretKeySelector struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type VolumeMount struct {
	Name        string `yaml:"name"`
	MountPath   string `yaml:"mountPath"`
	SubPathExpr string `yaml:"subPathExpr,omitempty"`
}

type SecurityContext struct {
	AllowPrivilegeEscalation *bool         `yaml:"allowPrivilegeEscalation,omitempty"`
	ReadOnlyRootFilesystem   *bool         `yaml:"readOnlyRootFilesystem,omitempty"`
	Capabilities             *Capabilities `yaml:"capabilities,omitempty"`
}

type Capabilities struct {
	Drop []string `yaml:"drop,omitempty"`
}

type Volume struct {
	Name                  string                             `yaml:"name"`
	EmptyDir              *EmptyDirVolumeSource              `yaml:"emptyDir,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `yaml:"persistentVolumeClaim,omitempty"`
}

// EmptyDirVolumeSource has no fields tunebench sets; it marshals as {}.
type EmptyDirVolumeSource struct{}

type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `yaml:"claimName"`
}

type Affinity struct {
	PodAntiAffinity *PodAntiAffinity `yaml:"podAntiAffinity,omitempty"`
}

type PodAntiAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `yaml:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

type PodAffinityTerm struct {
	LabelSelector *LabelSelector `yaml:"labelSelector,omitempty"`
	TopologyKey   string         `yaml:"topologyKey"`
}

type LabelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels,omitempty"`
}
