// Live job progress for the dashboard's job page: follows the job's
// server-sent events (the dashboard's proxy of GET /v1/jobs/{id}/events)
// and updates the state and the progress bar; when the job ends, the page
// reloads to show the final state and the model. Without JavaScript the
// page refreshes itself (a <noscript> meta refresh) instead.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var live = document.getElementById("live");
  if (!live || !live.dataset.events || !window.EventSource) return;
  var source = new EventSource(live.dataset.events);
  function show(e) {
    var job = JSON.parse(e.data);
    var bar = live.querySelector("progress");
    var rounds = live.querySelector(".rounds");
    var state = live.querySelector("#job-state .state");
    if (bar) { bar.max = Math.max(job.progress.tau, 1); bar.value = job.progress.rounds_done; }
    if (rounds) rounds.textContent = job.progress.rounds_done + " / " + job.progress.tau + " rounds";
    if (state) { state.textContent = job.state; state.className = "state state-" + job.state; }
  }
  source.addEventListener("progress", show);
  ["done", "failed", "cancelled"].forEach(function (name) {
    source.addEventListener(name, function (e) {
      show(e);
      source.close();
      window.location.reload();
    });
  });
});
