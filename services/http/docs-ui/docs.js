// mnemo's API reference: Swagger UI (vendor/, served from the binary) over
// this server's own /openapi.json. A separate file, not an inline script,
// so the page's Content-Security-Policy can say script-src 'self'.
(function () {
  "use strict";

  // The server's root as this page sees it. Relative, so the page works
  // behind a proxy that mounts the API under a prefix.
  var root = new URL(".", window.location.href);
  var container = document.getElementById("swagger-ui");

  function fail(message) {
    container.textContent = "Cannot show the API reference: " + message + ".";
  }

  fetch(new URL("openapi.json", root), { headers: { Accept: "application/json" } })
    .then(function (response) {
      if (!response.ok) {
        throw new Error("openapi.json answered " + response.status);
      }
      return response.json();
    })
    .then(function (spec) {
      // Try-it-out calls the server that served this page. The document's
      // `servers` names the embedded mode's default address, which is
      // another server (or none) whenever this one listens elsewhere or sits
      // behind a proxy, and a pasted token must not go there: the page's
      // connect-src 'self' would refuse it anyway.
      spec.servers = [
        { url: root.href.replace(/\/$/, ""), description: "This server (the one serving this page)" },
      ];
      window.ui = SwaggerUIBundle({
        spec: spec,
        dom_id: "#swagger-ui",
        presets: [SwaggerUIBundle.presets.apis],
        layout: "BaseLayout",
        // Operations listed under their tags, each linkable (#/tag/operationId).
        docExpansion: "list",
        deepLinking: true,
        filter: true,
        displayOperationId: true,
        displayRequestDuration: true,
        // The default posts the document to a public validator service.
        validatorUrl: null,
        // A pasted token lives as long as the tab, never in localStorage.
        persistAuthorization: false,
        // Try-it-out is offered for every method the API has.
        supportedSubmitMethods: ["get", "post", "patch", "delete"],
      });
    })
    .catch(function (error) {
      fail(error.message);
    });
})();
