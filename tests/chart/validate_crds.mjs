// Validates Prometheus Operator objects (monitoring.coreos.com/v1) with the validators that
// @kubernetes-models/prometheus-operator generates from the operator's CRD schemas.
//
// Usage: node validate_crds.mjs MODELS_DIR < manifests.json
//   MODELS_DIR: the npm prefix deploy/helm/install-helm.sh installed the package into.
//   stdin: a JSON array of manifests. stdout: a JSON array, one list of error strings per
//   manifest (empty = valid). Exit status 2 for a kind this script does not know.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modelsDir = process.argv[2];
const packageDir = join(modelsDir, "node_modules", "@kubernetes-models", "prometheus-operator");
const manifests = JSON.parse(readFileSync(0, "utf8"));

const results = [];
for (const manifest of manifests) {
  if (manifest.apiVersion !== "monitoring.coreos.com/v1") {
    console.error(`not a monitoring.coreos.com/v1 object: ${manifest.apiVersion}/${manifest.kind}`);
    process.exit(2);
  }
  const modelFile = join(packageDir, "monitoring.coreos.com", "v1", `${manifest.kind}.js`);
  let model;
  try {
    model = (await import(pathToFileURL(modelFile).href))[manifest.kind];
  } catch (error) {
    console.error(`no validator for kind ${manifest.kind}: ${error.message}`);
    process.exit(2);
  }
  try {
    new model(manifest).validate();
    results.push([]);
  } catch (error) {
    results.push([error.message]);
  }
}
process.stdout.write(JSON.stringify(results));
