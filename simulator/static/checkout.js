// The hosted checkout pages' one script (loaded with the page's CSP nonce). Everything it does
// is an enhancement: without it the codes stay selectable text and a pending payment page
// refreshes itself through a <noscript> meta refresh.
//  - copy buttons: <button data-copy="ELEMENT_ID" data-copied="Copied" hidden> copy the element's
//    text exactly;
//  - print buttons: <button data-print hidden>;
//  - live status: an element with data-status="pending" and data-status-url polls that URL every
//    second and, once the payment is no longer pending, shows its status and closing message.
(function () {
  "use strict";

  var POLL_MS = 1000;

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain-HTTP hosts other than localhost: the older selection-based copy.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "offscreen";
      document.body.appendChild(area);
      area.select();
      var done = document.execCommand("copy");
      document.body.removeChild(area);
      if (done) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  function setUpCopy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) { return; }
    var label = button.textContent;
    var timer = null;
    button.hidden = false;
    button.addEventListener("click", function () {
      copyText(target.textContent.trim()).then(function () {
        button.textContent = button.getAttribute("data-copied") || label;
        button.classList.add("copied");
        clearTimeout(timer);
        timer = setTimeout(function () {
          button.textContent = label;
          button.classList.remove("copied");
        }, 2000);
      }, function () {
        // Copy refused (no permission): select the text so the buyer can copy it by hand.
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
      });
    });
  }

  function showClosed(panel, state) {
    panel.setAttribute("data-status", state.status);
    var status = document.getElementById("status");
    if (status) {
      status.textContent = state.statusText;
      status.className = "status status-" + state.status;
    }
    var details = document.getElementById("payment-details");
    if (details) {
      var closed = document.createElement("p");
      closed.id = "closed-message";
      closed.textContent = state.message;
      details.replaceWith(closed);
    }
  }

  function watchStatus(panel) {
    var url = panel.getAttribute("data-status-url");
    var timer = null;
    var busy = false;
    function poll() {
      timer = null;
      if (document.hidden) { return; }  // resumed by visibilitychange
      busy = true;
      fetch(url, { cache: "no-store", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .catch(function () { return null; })
        .then(function (state) {
          busy = false;
          if (state && state.status && state.status !== "pending") {
            showClosed(panel, state);
          } else {
            timer = setTimeout(poll, POLL_MS);
          }
        });
    }
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && !busy && timer === null && panel.getAttribute("data-status") === "pending") {
        poll();
      }
    });
    timer = setTimeout(poll, POLL_MS);
  }

  function start() {
    document.querySelectorAll("button[data-copy]").forEach(setUpCopy);
    document.querySelectorAll("button[data-print]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { window.print(); });
    });
    var panel = document.querySelector("[data-status='pending'][data-status-url]");
    if (panel) { watchStatus(panel); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
