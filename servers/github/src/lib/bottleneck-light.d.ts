// The build the Octokit plugins load (bottleneck/light.js) ships no types of its own; client.ts
// describes the little of it that it touches.
declare module 'bottleneck/light.js' {
  const Bottleneck: unknown
  export default Bottleneck
}
