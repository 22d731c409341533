declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const SwaggerUIBundle: (options: { spec: object; dom_id: string; deepLinking?: boolean; onComplete?: () => void }) => unknown;
  export default SwaggerUIBundle;
}
