// The submit form (scheduler/jobs/forms.py): the GPU model list offers only the models the chosen pool has
// (each option's data-pools), and a workload class proposes its runtime limit and checkpoint interval
// (data-runtime, data-checkpoint) until the person types their own, and its maximum runtime (data-max-runtime,
// the class row's, the same rule the server applies) bounds the field. Without JavaScript every model is
// offered and the server says when a pool lacks one. A static file, since the CSP refuses inline scripts.
(function () {
  const form = document.querySelector("form.submit-job");
  if (!form) return;
  const pool = form.querySelector("select[name=pool]");
  const model = form.querySelector("select[name=gpu_model]");
  const workload = form.querySelector("select[name=workload_class]");
  const runtime = form.querySelector("input[name=max_runtime_minutes]");
  const checkpoint = form.querySelector("input[name=checkpoint_interval_minutes]");

  function filterModels() {
    if (!pool || !model) return;
    let firstOffered = null;
    for (const option of model.options) {
      const pools = (option.dataset.pools || "").split(" ");
      const offered = pools.includes(pool.value);
      option.hidden = !offered;
      option.disabled = !offered;
      if (offered && firstOffered === null) firstOffered = option;
    }
    const chosen = model.options[model.selectedIndex];
    if ((!chosen || chosen.disabled) && firstOffered) firstOffered.selected = true;
  }

  const typed = new Set();
  for (const input of [runtime, checkpoint]) {
    if (input) input.addEventListener("input", function () { typed.add(input.name); });
  }
  function classDefaults() {
    const option = workload && workload.options[workload.selectedIndex];
    if (!option) return;
    if (runtime && !typed.has(runtime.name) && option.dataset.runtime) runtime.value = option.dataset.runtime;
    if (runtime && option.dataset.maxRuntime) runtime.max = option.dataset.maxRuntime;
    if (checkpoint && !typed.has(checkpoint.name) && option.dataset.checkpoint !== undefined) {
      checkpoint.value = option.dataset.checkpoint;
    }
  }

  if (pool) pool.addEventListener("change", filterModels);
  if (workload) workload.addEventListener("change", classDefaults);
  filterModels();
})();
