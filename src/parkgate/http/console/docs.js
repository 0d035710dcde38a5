// Starts Swagger UI (the copy pinned in the swagger-ui-py package, served from /docs/assets)
// on this server's schema. A file of its own: the page's CSP runs no inline script.
"use strict";

window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
  });
});
